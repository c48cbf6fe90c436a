"""What an instructor should look at in a submission, whatever its score: the escape hatches the sandbox refuses or
cannot see, named in its code (``review_items``) or reported by the student's process while it ran
(``runtime_review_items``). Listed in the instructor's report; nothing here changes a grade.
"""
from __future__ import annotations

import ast

from autograder.graders.syntax import nodes

# Escape hatches the sandbox refuses or cannot see (docs/security/model.md): a submission that names one is listed
# for the instructor's review, whatever its score. name -> why it is worth a look.
REVIEW = {
    "signal": "신호 처리기는 실행 중인 프레임을 받습니다 (감시 커널의 프레임일 수 있음)",
    "setitimer": "신호 처리기는 실행 중인 프레임을 받습니다", "alarm": "신호 처리기는 실행 중인 프레임을 받습니다",
    "f_back": "프레임을 거슬러 올라갑니다", "f_locals": "프레임의 지역 변수를 읽습니다",
    "f_globals": "프레임의 전역을 읽습니다",
    "tb_frame": "트레이스백의 프레임을 읽습니다", "tb_next": "트레이스백을 따라갑니다",
    "gi_frame": "제너레이터의 프레임을 읽습니다",
    "_getframe": "호출 스택의 프레임을 읽습니다", "currentframe": "호출 스택의 프레임을 읽습니다",
    "__closure__": "함수의 클로저를 읽습니다 (감싼 원본 함수)",
    "__defaults__": "함수의 기본값을 읽습니다 (감싼 원본 함수)",
    "__kwdefaults__": "함수의 기본값을 읽습니다 (감싼 원본 함수)", "__code__": "함수의 코드 객체를 다룹니다",
    "getsource": "라이브러리 소스를 가져와 실행할 수 있습니다", "library": "torch 디스패처에 커널을 등록합니다",
    "Library": "torch 디스패처에 커널을 등록합니다", "get_kernel": "torch 디스패처의 커널을 직접 다룹니다",
    "call_boxed": "torch 디스패처의 커널을 직접 다룹니다", "redispatch": "torch 디스패처를 직접 다룹니다",
    "dup2": "파일 기술자를 바꿔치기합니다 (채점 기록 통로)", "ctypes": "네이티브 함수 호출 (샌드박스가 거부)",
    "fork": "자식 프로세스 (샌드박스가 거부)", "subprocess": "자식 프로세스 (샌드박스가 거부)",
    "get_referrers": "gc로 객체를 찾습니다 (샌드박스가 거부)", "get_objects": "gc로 객체를 찾습니다 (샌드박스가 거부)",
    "settrace": "추적 함수 (샌드박스가 거부)", "setprofile": "추적 함수 (샌드박스가 거부)",
    "_calculate_scores": "keras 어텐션 층의 내부 메서드", "_apply_scores": "keras 어텐션 층의 내부 메서드",
    "_compute_attention": "keras MultiHeadAttention의 내부 메서드", "_masked_softmax": "keras 층의 내부 메서드",
    "_refs": "torch의 파이썬 분해 구현", "_decomp": "torch의 파이썬 분해 구현",
    # TorchScript: a traced or scripted function runs no Python frame, so a library routine inside it is not seen
    "jit": "TorchScript로 추적하거나 컴파일한 코드 (안에서 도는 라이브러리 루틴은 감시에 보이지 않음)",
    "_create_function_from_trace": "TorchScript 추적 (안에서 도는 라이브러리 루틴은 감시에 보이지 않음)",
    "_create_method_from_trace": "TorchScript 추적 (안에서 도는 라이브러리 루틴은 감시에 보이지 않음)",
    # making or replacing code objects and functions: how a library routine is cloned
    "CodeType": "코드 객체를 만듭니다 (라이브러리 루틴의 복제일 수 있음)",
    "FunctionType": "코드 객체로 함수를 만듭니다 (라이브러리 루틴의 복제일 수 있음)",
    "LambdaType": "코드 객체로 함수를 만듭니다 (라이브러리 루틴의 복제일 수 있음)",
    "MethodType": "함수를 다른 객체의 메서드로 붙입니다 (라이브러리 루틴의 복제일 수 있음)",
    "code.replace": "코드 객체를 바꿔 새로 만듭니다 (라이브러리 루틴의 복제일 수 있음)",
}
# What the student's process reported while it ran (``inside.monitor.guard``'s audit hook: names built from strings
# are seen there too): report -> (what it is, why it is worth a look).
RUNTIME_REVIEW = {
    "code.__new__": ("types.CodeType / code.replace", "코드 객체를 만들거나 바꿔 새로 만들었습니다"),
    "function.__new__": ("types.FunctionType", "코드 객체로 함수를 만들었습니다"),
    "function.__code__": ("__code__ =", "함수의 코드 객체를 바꿨습니다"),
    "library.changed": ("라이브러리 변경",
                        "감시하는 라이브러리 모듈의 함수나 torch 디스패처의 커널 등록이 바뀌었습니다"),
    "signal.handler": ("신호 처리기",
                       "신호 처리기를 둔 채로 torch 연산을 실행하려 했습니다 (감시 커널의 프레임을 받을 수 있음)"),
    "library.source": ("라이브러리 소스",
                       "라이브러리 소스 파일을 읽어 다시 컴파일하거나 라이브러리 모듈을 다시 실행했습니다"),
    "library.traced": ("라이브러리 루틴 추적",
                       "감시하는 라이브러리 루틴을 torch.fx로 추적(make_fx, torch.export 등)해 코드를 만들었습니다 "
                       "(그 코드가 채점 중에 돌면 그 루틴으로 봅니다)"),
}


def review_items(sources: list[str]) -> list[str]:
    """What an instructor should look at in a submission's code cells (names of ``REVIEW`` used as attributes,
    names, imports or strings anywhere, not only in an exercise's ``def``): one Korean line per cell and name."""
    items = []
    for index, source in enumerate(sources):
        found = set()
        for node in nodes(source):
            if isinstance(node, ast.Attribute) and node.attr in REVIEW:
                found.add(node.attr)
            elif isinstance(node, ast.Name) and node.id in REVIEW:
                found.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom)
                                                          and node.module else [])
                found |= {part for name in names for part in name.split(".") if part in REVIEW}
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip() in REVIEW:
                found.add(node.value.strip())
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "replace"
                  and any((k.arg or "").startswith("co_") for k in node.keywords)):
                found.add("code.replace")
        items += [f"{index + 1}번째 코드 셀: `{name}` — {REVIEW[name]}" for name in sorted(found)]
    return items


def runtime_review_items(reported) -> list[str]:
    """Korean review lines for what the student's process reported while it ran (``RUNTIME_REVIEW``); an unknown
    report is listed as it came."""
    items = []
    for report in sorted(reported):
        what, why = RUNTIME_REVIEW.get(report, (report, "채점 중 감시기가 보고했습니다"))
        items.append(f"실행 중: `{what}` — {why} (라이브러리 루틴의 복제일 수 있음)")
    return items


def notebook_time_items(cell_routines: dict, code_cells: list[str], given) -> list[str]:
    """Korean review lines for the student's cells (a code cell that is not one of the release's, ``given``) that ran
    a watched library routine while the notebook ran, outside any graded call: what it computed (a table of masks
    or of normalised values, say) is not seen when an answer later uses it."""
    items = []
    for index in sorted(cell_routines):
        routines = sorted(cell_routines[index])
        if routines and 0 <= index < len(code_cells) and code_cells[index] not in given:
            items.append(f"{index + 1}번째 코드 셀: 채점 호출 밖에서 라이브러리 루틴을 실행했습니다 "
                         f"({', '.join(routines)}) — 그 결과를 답에 쓰면 감시에 보이지 않습니다")
    return items


def isolation_review(gap: str) -> list[str]:
    """The Korean review line of a submission graded without the isolation of each submission from the next
    (``Lane.isolation_gap``: '' when it had it, and then no line)."""
    if not gap:
        return []
    return ["격리: 이 제출물은 제출물마다 따로 두는 네임스페이스와 임시 공간 없이 채점되었습니다. "
            f"같은 채점 프로세스에서 앞서 채점된 제출물이 남긴 파일을 볼 수 있었으니 결과를 확인하세요 ({gap})"]
