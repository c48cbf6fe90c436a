"""The course's one catalogue of error reasons and notices: a code each, the Korean a student reads, and the
English that an instructor's command or log shows where there is one.

Code raises and carries codes, never English text to be matched later: ``Reason.TOO_BIG(path=p, size=80,
limit=50)`` is a :class:`Message` (the code and its fields) that a caller turns into ``.korean`` for a student or
``.english`` for an instructor; ``Reason.CALL_TIMEOUT.korean(seconds=2)`` formats the text at once. Tests build
the texts they expect from here, so a message is written once.

- :class:`Reason`: why something could not be graded or gave no value (a refused file, a call past its time, a
  process that ended, a forbidden routine, ...).
- :class:`Notice`: the texts around a reason (the note on a blank placeholder, a notebook's error line).
- :class:`Label`: the words of the hub's pages (login, feedback headings).
- :class:`ValidateText`: what nbgrader's Validate dialog says on the hub (``autograder/hub/lab_validate.py``).
- :class:`ListText`: what the Assignment List says on the hub beyond nbgrader's words (``hub/lab_assignments.py``).
- :class:`LtiText`: why the hub refused a launch from the LMS (``autograder/lti/login.py``).
- :class:`Verdict`: what the graders' shared checks say about a wrong value (not an array, another shape, not
  close to the reference, the stored GPU references, integers, the diagnosed mistakes, a function built on a
  wrong one).

Texts follow docs/glossary.md (particles attached: ``{name}`이(가)``, ``신호 {signal}로``). A particle after a
field can be chosen by how the value reads in Korean (``particle``): ``{name!c:을}`` writes ```layer_norm`을``,
```generate`를``; ``{err:이}`` writes ``1.11e-03이`` (``!c`` puts the value in code quotes; the spec is the particle
as written after a final consonant, or after a vowel: 은/는, 이/가, 을/를, 과/와, 으로/로).

Kept elsewhere, on purpose: the Korean of autograder/graders that belongs to one test or one exercise stays beside
it, written once there, as a pytest test's own messages are:

- a grader test's docstring (its first line is the test's description in the feedback) and the texts of its own
  checks (the ``what=``/``against=`` names given to ``compare``, ``expect_true`` and ``GradingFailure`` messages):
  ``graders/{attention,kv_cache,decoder}/test_*.py`` and ``graders/attention/properties.py``;
- an exercise's known mistakes (each one's title and hint), in its record ``graders/exercises/<exercise>.py`` (one
  record per exercise: adding an exercise is its grader file, its record and its notebook cells);
- the quiz: its questions' explanations (``graders/quiz/answer_key.py``) and how an answer was read
  (``graders/quiz/test_quiz.py``);
- why a submission is on the instructor's review list (``graders/review.py``: the instructor's report only).

And outside the graders: ``autograder/sandbox/inside`` (a few short texts of the student's process: a denied
operation, a proxy called outside a graded call, a value too deep) cannot import this module, because the package
is copied alone into the student's sandbox and imports nothing of ``autograder``; the instructor's report, the demo's
roster and the hub's roster keep their own Korean page text (``feedback/``, ``demo/``, ``hub/roster.py``).
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from enum import Enum


# A particle's two forms: after a final consonant, after a vowel (or ㄹ, for 으로/로).
_PARTICLES = {"은": ("은", "는"), "는": ("은", "는"), "이": ("이", "가"), "가": ("이", "가"), "을": ("을", "를"),
              "를": ("을", "를"), "과": ("과", "와"), "와": ("과", "와"), "으로": ("으로", "로"), "로": ("으로", "로")}
# How a word's last sound reads in Korean: the final consonant of its last syllable, "" for none, "ㄹ" for ㄹ.
_DIGITS = "ㅇㄹ ㅁ ㄱㄹㄹ "        # 영 일 이 삼 사 오 육 칠 팔 구 (a trailing 0 of 10, 100, ... reads 십, 백, 천, 만)
# An upper-case abbreviation by its last letter's name: 엘, 엠, 엔, 알 (the rest: 에이, 비, ...).
_LETTERS = {"l": "ㄹ", "m": "ㅁ", "n": "ㄴ", "r": "ㄹ"}


def _final_sound(word: str) -> str:
    """The final consonant of ``word`` as read in Korean ("" when it ends in a vowel sound). Hangul by its last
    syllable; digits as Korean numbers (1.11e-03: 삼); code and English words by their usual Korean spelling (block
    블록, norm 노름, attention 어텐션, mask 마스크, generate 제너레이트, layer 레이어)."""
    word = word.rstrip(" `'\")]}*")
    if not word:
        return ""
    last = word[-1]
    if "가" <= last <= "힣":
        final = (ord(last) - ord("가")) % 28
        return "" if final == 0 else ("ㄹ" if final == 8 else "ㄱ")
    if last.isdigit():
        return _DIGITS[int(last)].strip()
    if not last.isascii() or not last.isalpha():
        return ""
    tail = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", word)[-1]
    if tail.isupper():                                   # GQA, KV, MHA: the last letter's name
        return _LETTERS.get(tail[-1].lower(), "")
    tail = tail.lower()
    if tail.endswith("ng") or tail[-1] in "mn":
        return "ㄴ"
    if tail[-1] == "l":
        return "ㄹ"
    if tail.endswith("ck") or (len(tail) > 1 and tail[-1] in "kpbt" and tail[-2] in "aeiou"
                               and tail[-3:-2] not in ("a", "e", "i", "o", "u")):
        return "ㄱ"                                      # block 블록, step 스텝, split 스플릿 (not loop 루프)
    return ""


def particle(word, which: str) -> str:
    """``word`` with the particle ``which`` (either of its forms) in the form its Korean reading takes:
    ``particle("`layer_norm`", "를")`` is ```layer_norm`을``, ``particle("1.11e-03", "가")`` is ``1.11e-03이``."""
    word = str(word)
    after_consonant, after_vowel = _PARTICLES[which]
    final = _final_sound(word)
    if after_consonant == "으로":
        return word + ("으로" if final and final != "ㄹ" else "로")
    return word + (after_consonant if final else after_vowel)


class _Korean(string.Formatter):
    """``str.format`` with two additions: ``!c`` puts a value in code quotes, and a spec that is a particle
    (``{name!c:을}``) appends it in the form the value's reading takes (``particle``)."""

    def convert_field(self, value, conversion):
        return f"`{value}`" if conversion == "c" else super().convert_field(value, conversion)

    def format_field(self, value, format_spec):
        if format_spec in _PARTICLES:
            return particle(value, format_spec)
        return super().format_field(value, format_spec)


_FORMAT = _Korean()


class _Catalogue(Enum):
    """A member's value is (Korean, English); an empty English means the Korean is shown to instructors too."""

    def __init__(self, korean: str, english: str = ""):
        self._korean, self._english = korean, english

    def __call__(self, **fields) -> "Message":
        """This code with its fields, to be carried and shown later."""
        return Message(self, fields)

    def korean(self, **fields) -> str:
        return _FORMAT.format(self._korean, **fields)

    def english(self, **fields) -> str:
        return _FORMAT.format(self._english or self._korean, **fields)

    def found_in(self, text: str) -> bool:
        """Whether ``text`` holds this code's Korean, whatever its fields (for tests that cannot know them)."""
        parts = string.Formatter().parse(self._korean)
        pattern = "".join(re.escape(literal) + (".*?" if name is not None else "") for literal, name, _, _ in parts)
        return re.search(pattern, text, re.S) is not None


@dataclass
class Message:
    """A code of the catalogue with the values of its format fields."""

    code: _Catalogue
    fields: dict = field(default_factory=dict)

    @property
    def korean(self) -> str:
        return self.code.korean(**self.fields)

    @property
    def english(self) -> str:
        return self.code.english(**self.fields)

    def __str__(self) -> str:
        return self.english


_NOT_PLAIN = "일반 파일이 아닙니다 (FIFO, 장치 파일, 소켓, 폴더는 읽지 않습니다)"
_SLOWER = "더 빠르게 (예: 반복문 대신 벡터 연산으로) 계산하세요."


class Reason(_Catalogue):
    """Why a submission, a file, a cell or a call gave no grade or no value."""

    # --- a submitted file (autograder/submission, autograder/gradebook): refused, or not a gradable notebook
    SYMBOLIC_LINK = ("심볼릭 링크입니다. 링크가 가리키는 파일은 읽지 않습니다 (노트북 파일 자체를 제출하세요)",
                     "it is a symbolic link")
    HARD_LINK = ("하드 링크입니다. 다른 이름과 내용을 공유하는 파일은 읽지 않습니다 "
                 "(노트북을 새 파일로 저장해 제출하세요)",
                 "it is a hard link ({names} names)")
    DIRECTORY = (_NOT_PLAIN, "it is a directory")
    FIFO = (_NOT_PLAIN, "it is a FIFO")
    SOCKET = (_NOT_PLAIN, "it is a socket")
    DEVICE_FILE = (_NOT_PLAIN, "it is a device file")
    NOT_REGULAR = (_NOT_PLAIN, "it is not a regular file")
    UNREADABLE = ("파일을 읽을 수 없습니다 ({error})", "{error}")
    TOO_BIG = ("파일이 너무 큽니다 ({size} MB, 한도 {limit} MB)", "{path} is {size} MB, over the limit of {limit} MB")
    GREW_TOO_BIG = ("파일이 너무 큽니다 (한도 {limit} MB)", "{path} is over the limit of {limit} MB")
    NOT_UTF8 = ("UTF-8 텍스트가 아닙니다", "{path} is not UTF-8 text")
    NOT_A_NOTEBOOK = ("올바른 Jupyter 노트북(JSON) 파일이 아닙니다 (잘렸거나 손상됨)",
                      "{path} is not a Jupyter notebook ({error})")
    NOTEBOOK_TOO_COMPLEX = ("노트북 파일의 구조가 너무 큽니다 ({what} {count:,}, 한도 {limit:,}). 셀의 출력과 "
                            "메타데이터를 지우고 다시 제출하세요",
                            "{path}: {what_en} {count}, over the limit of {limit}")
    CELL_TOO_BIG = ("이 코드 셀은 너무 커서 실행하지 않았습니다 ({size:,}자, 셀 하나의 한도 {limit:,}자). 큰 데이터는 "
                    "코드에 붙여 넣지 말고 코드로 만들어 쓰세요",
                    "a code cell of {size} characters, over the limit of {limit}: not run")
    CODE_TOO_BIG = ("노트북의 코드가 너무 많아 이 셀부터는 실행하지 않았습니다 (코드 셀 전체의 한도 {limit:,}자)",
                    "the code cells hold more than {limit} characters in all: this cell and the later ones not run")
    NO_ASSIGNMENT = ("이 과제의 셀을 찾을 수 없습니다", "no known assignment's cells were found in this notebook")
    OTHER_ASSIGNMENT = ("다른 과제의 노트북입니다",)
    NOT_THIS_ASSIGNMENT = ("다른 과제의 노트북입니다 (셀은 {found} 과제의 것인데 파일 이름이나 --assignment는 "
                           "{expected} 과제입니다)",
                           "its cells are those of the assignment {found!r}, not of {expected!r} (what the file's "
                           "name or --assignment says)")
    # --- a submission of a class run past its time (autograder/gradebook/worker.py)
    OVERTIME = ("채점이 제출물 하나의 제한 시간({limit:g}초)을 넘어 중단되었습니다. 끝나지 않거나 매우 느린 코드가 "
                "있는지 확인하세요",)
    # --- a class run's grading worker that ended while it graded a submission, twice (the second time in a fresh one)
    WORKER_MEMORY = ("채점하던 프로세스가 메모리가 부족해 운영체제에 의해 종료되었습니다 (새 프로세스에서 다시 "
                     "채점했지만 또 종료됨). 메모리를 끝없이 쓰는 코드가 있는지 확인하고 조교에게 알려 주세요",
                     "the grading worker was killed for lack of memory (the kernel's OOM killer), twice")
    WORKER_SIGNAL = ("채점하던 프로세스가 신호 {signal}로 종료되었습니다 (새 프로세스에서 다시 채점했지만 또 종료됨). "
                     "조교에게 알려 주세요",
                     "the grading worker was killed by signal {signal}, twice")
    WORKER_EXIT = ("채점하던 프로세스가 종료 코드 {code}로 끝났습니다 (새 프로세스에서 다시 채점했지만 또 끝남). "
                   "조교에게 알려 주세요",
                   "the grading worker exited with code {code}, twice")

    # --- the student's process (autograder/sandbox/process.py)
    CALL_TIMEOUT = ("제한 시간 {seconds:.3g}초 안에 끝나지 않았습니다. 제한 시간을 넘긴 함수는 남은 검사에서 다시 "
                    "호출하지 않습니다.",)
    CPU_TIME = ("CPU 시간 제한을 넘어 학생 코드의 프로세스가 종료되었습니다.",)
    SIGNAL = ("학생 코드의 프로세스가 신호 {signal}로 비정상 종료되었습니다 (예: 메모리 초과, 세그멘테이션 오류).",)
    EXIT_CODE = ("학생 코드의 프로세스가 종료 코드 {code}로 끝났습니다 (예: sys.exit, os._exit).",)
    NOT_IMPLEMENTED = ("아직 구현하지 않았습니다 (NotImplementedError).",)
    MEMORY_ERROR = ("메모리가 부족합니다 (MemoryError): 중간 결과가 너무 큽니다.",)
    EXCEPTION = ("함수를 호출하는 중 예외가 발생했습니다 — {error}",)
    WAIT_TIMEOUT = ("제한 시간 {seconds:g}초 안에 끝나지 않았습니다 ({what}).",)
    NOTEBOOK_TIMEOUT = ("노트북 전체 실행 시간 제한({seconds:g}초)을 넘어 실행하지 못했습니다.",)
    OUTPUT_ELIDED = ("(노트북 전체의 출력이 너무 많아 이 셀의 출력은 생략했습니다)",)
    RESTART_LIMIT = ("학생 코드의 프로세스가 {restarts}번 다시 시작되어 제출물 하나의 재시작 한도에 이르렀습니다. "
                     "나머지 검사는 하지 않았습니다.",)
    REPLAY_TIMEOUT = ("프로세스를 다시 시작하며 앞의 셀들을 다시 실행하는 중에 제출물의 채점 시간 제한을 넘었습니다. "
                      "나머지 검사는 하지 않았습니다.",)
    SUBMISSION_TIMEOUT = ("제출물 전체의 채점 시간 제한을 넘어 나머지 검사는 하지 않았습니다.",)
    NOT_RUNNING = ("학생 코드의 프로세스가 실행 중이 아닙니다.",)
    REPLY_TOO_BIG = ("학생 프로세스가 보낸 값이 너무 큽니다 ({size_mb:.0f} MB, 한도 {limit_mb} MB): 받지 않았습니다.",)
    MALFORMED_REPLY = ("학생 프로세스가 채점기와 주고받는 형식에 맞지 않는 값을 보냈습니다 (숫자 배열과 기본 값만 "
                       "받습니다): {error}",)
    UNASKED_REPLY = ("학생 프로세스가 요청하지 않은 답을 보냈습니다 (응답 순서가 맞지 않음).",)
    EVENTS_TAMPERED = ("{what}: 라이브러리 사용 기록을 조작하려는 시도로 보고 이 검사는 0점입니다.",)
    EVENTS_GARBLED = ("기록 통로에 알 수 없는 내용이 쓰였습니다",)
    EVENTS_CLOSED = ("학생 코드가 채점 기록 통로를 닫았습니다",)
    UNDEFINED_NAME = ("`{name}`이(가) 노트북에 정의되어 있지 않습니다.",)
    NO_REFERENCE_NOW = ("지금은 참조 결과를 물을 수 없습니다.",)
    NOT_GIVEN_NOW = ("`{name}`의 참조 결과는 지금 채점 중인 함수에 주어지지 않습니다.",)
    # --- a proxy's question (autograder/graders/isolation.py: while an exercise is graded, the other contract
    # functions it calls are answered with the graders' reference; the answer's memory and time are limited)
    ANSWER_TOO_BIG = ("`{asked}`의 결과는 채점 중에 채점기의 참조 구현이 계산하는데, 이 입력으로는 메모리가 "
                      "{need_mb:,.0f} MiB 필요해 한도 {limit_mb} MiB를 넘으므로 계산하지 않았습니다. 채점 입력보다 "
                      "훨씬 큰 배열(아주 긴 시퀀스, 브로드캐스팅으로 커지는 배치 축)을 넘기지 않았는지 확인하세요.",
                      "a proxy question for `{asked}` needs {need_mb:,.0f} MiB, over the limit of {limit_mb} MiB: "
                      "refused")
    ANSWER_MEMORY = ("`{asked}`의 참조 결과를 계산하는 중 메모리 한도 {limit_mb} MiB를 넘어 계산을 멈췄습니다. "
                     "채점 입력보다 훨씬 큰 배열을 넘기지 않았는지 확인하세요.",
                     "the answer to a proxy question for `{asked}` ran out of its {limit_mb} MiB")
    ANSWER_TIME = ("`{asked}`의 참조 결과를 이 호출의 제한 시간 안에 계산하지 못했습니다 (참조 결과를 계산하는 시간도 "
                   "호출 시간에 들어갑니다).",
                   "the answer to a proxy question for `{asked}` did not finish within the call's time limit")
    NOT_NUMERIC = ("숫자 배열이 아닌 값이 돌아왔습니다 (dtype={dtype}).",)
    UNKNOWN_VALUE = ("알 수 없는 값이 돌아왔습니다.",)

    # --- a grader's call of the student's code (autograder/graders/plugin.py)
    UNDEFINED_VARIABLE = ("변수 `{name}`이(가) 노트북에 정의되어 있지 않습니다.",)
    UNDEFINED_FUNCTION = ("함수 `{name}`이(가) 노트북에 정의되어 있지 않습니다. 이름과 철자, 해답 셀의 실행 오류를 "
                          "확인하세요.",)
    MEMORY_OVER_LIMIT = ("`{name}`: 메모리를 {peak_mb:.0f} MiB 더 사용했습니다 (허용 {memory_mb} MiB). "
                         "전체 점수 행렬을 한 번에 만들지 말고 블록 단위로 계산하세요.",)
    EXERCISE_TIME_SPENT = ("`{name}`: 이 함수의 호출이 모두 합쳐 채점 시간 {budget:g}초를 다 써서 남은 검사에서는 "
                           "더 호출하지 않았습니다. " + _SLOWER,)
    CALLS_TIME_SPENT = ("`{name}`: 이 제출물의 함수 호출이 모두 합쳐 채점 시간 {budget:g}초를 다 써서 남은 검사에서는 "
                        "더 호출하지 않았습니다. " + _SLOWER,)
    FORBIDDEN_ROUTINE = ("`{name}`이(가) 금지된 라이브러리 루틴({routines})을 사용했습니다. 이 연습은 그 계산을 직접 "
                         "구현하는 것이므로 점수를 드릴 수 없습니다 (다른 곳에서 쓰는 것은 괜찮습니다).",)
    SKIPPED = ("건너뛰었습니다.",)
    UNCHECKABLE_VALUE = ("반환값을 검사할 수 없습니다 ({error}): 반환값의 모양과 자료형을 확인하세요.",)
    GRADER_ERROR = ("채점기 내부 오류가 발생했습니다 ({error}). 조교에게 알려 주세요.",)
    # --- a submission refused by the hub's exchange when it arrives (autograder/hub/exchange_service.py)
    SUBMISSION_TOO_BIG = ("제출물이 너무 큽니다 ({size_mb:.1f} MB, 한도 {limit_mb:g} MB). 데이터 파일이나 큰 "
                          "출력을 빼고 다시 제출하세요.",
                          "the submission is {size_mb:.1f} MB, over the limit of {limit_mb:g} MB")
    TOO_MANY_FILES = ("제출물의 파일이 너무 많습니다 ({count}개, 한도 {limit}개). 과제 폴더에 필요한 파일만 두고 다시 "
                      "제출하세요.", "{count} files, over the limit of {limit}")
    BAD_FILE_NAME = ("제출할 수 없는 파일 이름입니다: {path}", "the file name {path!r} is not allowed")
    MALFORMED_SUBMISSION = ("제출물의 형식이 올바르지 않습니다 ({what}). JupyterLab의 Assignments 목록에서 다시 "
                            "제출하세요.", "a malformed submission ({what})")
    TOO_MANY_SUBMISSIONS = ("이 과제는 이미 {limit}번 제출했습니다. 더 제출하려면 조교에게 문의하세요.",
                            "{limit} submissions of this assignment already, the limit")
    UPLOADS_PAUSED = ("최근 {window_min:g}분 동안 제출이 {count}번 거부되어 {until}까지(약 {minutes}분) 제출을 받지 "
                      "않습니다. 그 전에 다시 제출하면 기다리는 시간이 늘어납니다. 앞서 거부된 까닭(제출물의 크기나 "
                      "형식)을 고친 뒤에 다시 제출하세요.",
                      "{count} refused uploads in the last {window_s:.0f} s: uploads paused for {wait_s:.0f} s more")
    EXCHANGE_DOOR = ("지금은 이 요청을 받을 수 없습니다. 잠시 뒤에 다시 시도하고, 계속되면 조교에게 문의하세요.",
                     "refused at the door: {why}")
    STORED_TOO_MUCH = ("이 과목에 보관된 제출물이 이미 {stored_mb:.1f} MB라서 이번 제출로 한도 {limit_mb:g} MB를 "
                       "넘습니다. 더 제출하려면 조교에게 문의하세요.",
                       "{stored_mb:.1f} MB stored for this course already; with this submission over the limit of "
                       "{limit_mb:g} MB")


class Notice(_Catalogue):
    """Texts a student reads around a reason."""

    NOT_GRADED = ("**⚠️ 제출한 노트북 `{notebook}`을(를) 채점할 수 없었습니다.** 원인: {reason}\n\n"
                  "제출한 파일은 그대로 보관되어 있으며, 이 과제는 0점으로 처리되었습니다. 파일을 Jupyter에서 다시 "
                  "저장해 제출하거나 조교에게 문의하세요.",)
    UNSANDBOXED = ("주의: 이 제출물은 샌드박스 없이 채점되었습니다 (교수자가 명시적으로 허용함).",)
    NOTEBOOK_FAILED = ("노트북 코드를 실행하는 중 문제가 생겼습니다: {message}",)
    CELL_ERROR = ("{cell}번째 코드 셀: {error}: {message}{where}",)
    OUTPUT_HIDDEN = ("[표시하지 않음: {types} 출력은 보안상 채점 결과에 보이지 않습니다]",)
    # --- the late penalty of a notebook graded in CI or on Gradescope (autograder/ci/late.py)
    LATE = ("기한보다 {days}일 늦게 제출해 지각 감점으로 점수의 {percent:g}%({points}점)를 뺐습니다 (제출 {submitted}, "
            "기한 {due}).", "{days} day(s) late: -{percent:g}% = -{points} points (submitted {submitted}, due {due})")
    ON_TIME = ("기한 안에 제출했습니다 (제출 {submitted}, 기한 {due}).", "on time (submitted {submitted}, due {due})")
    # --- a notebook that CI or Gradescope could not grade at all: the assignment's every exercise is 0
    NOT_GRADED_CI = ("제출한 {notebook!c:을} 채점할 수 없어 이 과제는 0점입니다. 원인: {reason}",
                     "{notebook} could not be graded (0 points): {reason}")
    # --- markdown, raw cells and rich outputs shown as plain text instead of rendered (autograder/feedback/sanitize.py)
    MARKDOWN_TOO_BIG = ("⚠️ 이 셀은 너무 커서 ({size:,}자, 셀 하나의 한도 {limit:,}자) 서식 없이 글자 그대로 "
                        "보여 줍니다. 점수와는 관계없습니다.",)
    MARKDOWN_TOO_MUCH = ("⚠️ 노트북의 마크다운이 너무 많아 이 셀부터는 서식 없이 글자 그대로 보여 줍니다 (셀 전체의 "
                         "한도 {limit:,}자). 점수와는 관계없습니다.",)
    MARKDOWN_TOO_DEEP = ("⚠️ 이 셀은 HTML 태그가 너무 많거나 너무 깊이 겹쳐 있어 (한도: 태그 {max_tags:,}개, 깊이 "
                         "{max_depth}) 서식 없이 글자 그대로 보여 줍니다. 점수와는 관계없습니다.",)
    MARKDOWN_NOT_RENDERED = ("⚠️ 이 셀의 서식을 제한 시간({seconds:g}초)과 메모리 안에 만들지 못해 서식 없이 글자 "
                             "그대로 보여 줍니다. 점수와는 관계없습니다.",)
    MARKDOWN_CUT = ("… (글자 {count:,}자를 더 보여 주지 않았습니다: 노트북 전체에서 글자 그대로 보여 주는 한도 "
                    "{limit:,}자. 제출한 파일에는 그대로 있습니다)",)


class Verdict(_Catalogue):
    """What the graders' shared checks say about a wrong value (``autograder/graders``: compare.py, gpu_checks.py,
    gpu_refs/store.py, kv_cache/__init__.py, diagnosis.py, isolation.py); ``what`` names the compared quantity."""

    # --- a value that is not an array, or not of the expected shape (compare.py)
    RETURNED_NONE = ("{what}: None이 반환되었습니다. return 문을 확인하세요.",)
    RETURNED_SEQUENCE = ("{what}: 배열 하나가 아니라 {kind}(길이 {length})가 반환되었습니다.",)
    RETURNED_NOT_ARRAY = ("{what}: 배열이 아닌 값({kind})이 반환되었습니다.",)
    WRONG_SHAPE = ("{what}의 모양이 다릅니다: 기대 {expected}, 실제 {got}.",)
    # --- an array against its reference (compare.py); AGAINST is the optional "({against} 기준)" of both
    AGAINST = (" ({against} 기준)",)
    NOT_FINITE = ("{what}: NaN/inf가 {bad}개 있습니다{against}. 모양 {shape}.",)
    NOT_CLOSE = ("{what}: 기대값과 다릅니다{against}. 모양 {shape}, 최대 오차 {error:.3g} (허용 {tolerance}).",)
    # --- against the stored GPU references (gpu_checks.py, gpu_refs/store.py)
    STORED_NOT_FINITE = ("{what}: NaN/inf가 있습니다 (저장된 참조 {case}의 입력).",)
    STORED_ONE = ("{label}: 최대 오차 {error:.3g} (허용 {tolerance})",)
    STORED_MORE = (" 외 {count}개",)
    STORED_DIFFERS = ("{what}: 저장된 참조 출력 {case}과 다릅니다 ({failed}/{checks}개 참조에서 실패) — {shown}.",)
    STORED_OUTPUT = ("{device} · {backend} 백엔드 · {dtype}",)
    STORED_OUTPUTS = ("{devices} · 백엔드 {backends} · {dtypes}",)
    # --- integers: cache sizes and token counts (kv_cache/__init__.py)
    NUMBER_IS_BOOL = ("{what}: 숫자가 아니라 bool({value})이 반환되었습니다.",)
    NUMBER_IS_ARRAY = ("{what}: 숫자 하나가 아니라 모양 {shape}의 배열이 반환되었습니다.",)
    NOT_A_NUMBER = ("{what}: 숫자가 아닌 값({kind})이 반환되었습니다.",)
    INTEGER_DIFFERS = ("{what}: {shown}이(가) 나왔지만 기대값과 다릅니다 (정수는 정확히 같아야 합니다).",)
    NOT_AN_INTEGER = ("{what}: 정수(int)가 아니라 {kind} 값 {value!r}이(가) 반환되었습니다. "
                      "바이트 수와 토큰 수는 정수입니다: `/` 대신 정수 연산(`*`, `//`)만 쓰세요.",)
    # --- the mistakes that explain a wrong value (diagnosis.py), and a function built on a wrong one (isolation.py)
    DIAGNOSED = (" 진단: {titles}",)
    BUILT_ON_WRONG = ("{exercise!c:은} 직접 만든 {name!c:을} 호출합니다. {name!c:이} 틀려서 실제로는 이 함수도 틀린 "
                      "결과를 냅니다.",)


class Label(_Catalogue):
    """The words around what a student reads on the hub: its login page and the feedback page's headings (nbgrader's
    and JupyterHub's English labels, in Korean; the English is the original)."""

    # the hub's login page (autograder/hub/templates/login.html)
    SIGN_IN = ("로그인", "Sign in")
    USERNAME = ("사용자 이름", "Username:")
    PASSWORD = ("비밀번호", "Password:")
    INSECURE = ("주의: 이 허브는 암호화되지 않은 HTTP로 연결되어 있습니다. 비밀번호가 네트워크에서 보일 수 있으니 "
                "관리자에게 HTTPS를 요청하세요.",
                "Warning: JupyterHub seems to be served over an unsecured HTTP connection.")
    # the feedback page (autograder/feedback/templates/autograder-feedback)
    SCORE = ("점수", "Score")
    TEST_CELL = ("채점 셀", "Test cell")
    CODE_ANSWER = ("코드 서술형 답안", "Coding free-response")
    WRITTEN_ANSWER = ("서술형 답안", "Written response")
    TASK = ("과제 항목", "Task")
    COMMENT = ("의견", "Comment")
    STUDENT_ANSWER = ("학생 답안", "Student's answer")
    STUDENT_TASK = ("학생 과제 항목", "Student's task")
    GRADE_CELL = ("채점 셀", "Grade cell")
    TOP = ("맨 위로", "Top")
    LATE_PENALTY = ("지각 감점", "Late submission penalty")
    EXTENSION = ("기한 연장 {days}: 마감 {due}", "Extension of {days}: due {due}")
    DAYS = ("{days}일", "{days} day(s)")
    HOURS = ("{hours}시간", "{hours} hour(s)")
    CONTENTS = ("연습별 점수", "Scores by exercise")
    REGRADE = ("재채점 요청", "Regrade request")
    REGRADE_HOW = ("채점이 잘못되었다고 생각하면 Assignment List에서 ‘regrade’ 과제를 받아(Fetch) "
                   "regrade_request.md에 과제 이름, 연습 이름(위 목록의 이름), 이유를 적어 제출(Submit)하세요. "
                   "다시 제출하면 마지막 것만 남으니 답을 받지 못한 요청도 함께 적으세요. "
                   "요청은 점수를 바꾸지 않습니다: 교수자가 읽고 채점을 다시 확인합니다.",
                   "To ask for a regrade, fetch the ‘regrade’ assignment, fill in regrade_request.md and submit it.")
    # the login page of a hub that logs in through the LMS (LTI 1.3, autograder/lti/login.py): no password form
    LTI_ONLY = ("이 허브에는 LMS(Canvas, Moodle 등)의 강의 페이지에 있는 JupyterHub 링크로 들어옵니다. 이 주소로 바로 "
                "로그인할 수는 없습니다.", "Sign in from the course's page in the LMS.")

    @classmethod
    def korean_all(cls) -> dict[str, str]:
        """Every label's Korean by its name in lower case (what the templates read); a label with fields as its
        template (filled where it is used)."""
        return {member.name.lower(): member._korean if "{" in member._korean else member.korean() for member in cls}


class ValidateText(_Catalogue):
    """What the Validate dialog of a student's JupyterLab on the hub says (``autograder/hub/lab_validate.py``): one
    short list of the exercises that passed their visible checks and those that failed, instead of nbgrader's
    "Validation Results / The following cell failed:" with every failing cell's source. The students' environment
    has no ``autograder`` package: the hub writes these templates (``templates()``) next to that module."""

    TITLE = ("검증 결과", "Validation Results")
    COUNTS = ("보이는 확인을 통과한 문제 {passed}개, 실패한 문제 {failed}개", "{passed} passed, {failed} failed")
    ALL_PASSED = ("보이는 확인을 모두 통과했습니다. 제출하면 비공개 채점기가 더 많은 경우를 검사합니다.",
                  "Success! Your notebook passes all the tests.")
    PASSED = ("✅ {name} 통과", "passed: {name}")
    FAILED = ("❌ {name} 실패: {reason}", "failed: {name}: {reason}")
    FAILED_EARLIER = ("❌ {name} 실패: {where}에서 먼저 오류가 났습니다: {reason}",
                      "failed: {name}: {where} failed first: {reason}")
    CODE_CELL = ("{number}번째 코드 셀", "code cell {number}")
    BY_HAND = ("📝 {name}: 제출한 뒤 손으로 채점합니다", "{name}: graded by hand")
    CHANGED = ("바뀌면 안 되는 셀이 바뀌었습니다: {names}. 채점할 때는 원래 셀로 되돌려 채점합니다.",
               "The contents of {names} have changed")
    TYPE_CHANGED = ("셀의 종류(코드, 마크다운)가 바뀌었습니다: {names}. 원래 종류로 되돌린 뒤 다시 검증하세요.",
                    "The cell types of {names} have changed")
    NOT_RUN = ("검증을 실행하지 못했습니다: {reason}", "There was an error running the validate command: {reason}")
    OK = ("확인", "Ok")
    # the cell that failed first, in Korean (Python's own message where none of these fits)
    SOLUTION_CELL = ("`{name}` 해답 셀({number}번째 코드 셀)", "the solution cell of {name} (code cell {number})")
    CHECK_CELL = ("`{name}` 확인 셀({number}번째 코드 셀)", "the check cell of {name} (code cell {number})")
    AT_LINE = (" {line}번째 줄", " line {line}")
    FIRST_ERROR = ("먼저 고칠 오류: {error}.", "fix first: {error}.")
    FOLLOWS = ("이 오류 때문에 {names}이(가) 정의되지 않아 뒤의 셀 {count}개도 실패했습니다: {cells}.",
               "because of it {names} is not defined and {count} later cells failed too: {cells}.")
    FAILED_BECAUSE = ("❌ {name} 실패: {where}의 오류 때문에 `{missing}`이(가) 정의되지 않았습니다",
                      "failed: {name}: {missing} is not defined because {where} failed")
    SYNTAX_UNINDENT = ("들여쓰기가 바깥 블록의 어느 줄과도 맞지 않습니다 ({ename})",)
    SYNTAX_UNEXPECTED_INDENT = ("필요 없는 들여쓰기가 있습니다 ({ename})",)
    SYNTAX_EXPECTED_INDENT = ("들여쓴 블록이 와야 할 자리에 없습니다: `def`, `if`, `for` 줄의 다음 줄은 "
                              "들여써야 합니다 ({ename})",)
    SYNTAX_TABS = ("들여쓰기에 탭과 공백이 섞여 있습니다: 공백 네 칸으로 맞추세요 ({ename})",)
    SYNTAX_STRING = ("따옴표가 닫히지 않은 문자열이 있습니다 ({ename})",)
    SYNTAX_NOT_CLOSED = ("여는 괄호가 닫히지 않았습니다 ({ename})",)
    SYNTAX_UNMATCHED = ("짝이 맞지 않는 닫는 괄호가 있습니다 ({ename})",)
    SYNTAX_COLON = ("줄 끝에 `:`이 빠졌습니다 ({ename})",)
    SYNTAX_COMMA = ("파이썬 문법에 맞지 않습니다: 쉼표(,)를 빠뜨리지 않았는지 확인하세요 ({ename})",)
    SYNTAX_INVALID = ("파이썬 문법에 맞지 않는 코드입니다 ({ename})",)
    SYNTAX_OTHER = ("파이썬 문법에 맞지 않는 코드입니다 ({ename}: {message})",)
    UNDEFINED_NAME = ("`{name}`이(가) 정의되어 있지 않습니다 (NameError)",)
    CELL_TIMEOUT = ("셀이 셀 하나의 제한 시간 안에 끝나지 않아 중단했습니다: 끝나지 않는 반복문이 있는지 확인하세요",)
    RUNTIME_ERROR = ("{ename} 오류가 났습니다: {message}",)
    # a Validate that did not finish: past its time limit, cancelled, another one running, its process gone
    TIME_LIMIT = ("검증이 제한 시간 {seconds}초 안에 끝나지 않아 멈췄습니다. {running} 끝나지 않는 반복문(예: "
                  "`while True:`)이나 아주 오래 걸리는 계산이 있는지 확인하세요. 노트북은 저장되어 있으니 그대로 "
                  "이어서 작업할 수 있습니다.",
                  "Validate did not finish within its limit of {seconds} s and was stopped.")
    CANCELLED = ("검증을 취소했습니다. {running}", "Validate was cancelled.")
    WAS_RUNNING = ("멈출 때 {where}을 실행하고 있었습니다.", "It was running {where}.")
    WAS_STARTING = ("멈출 때 아직 커널을 시작하고 있었습니다.", "It was still starting its kernel.")
    BUSY = ("다른 검증이 아직 실행 중입니다 ({path}). 그 검증이 끝나거나 그것을 취소한 뒤에 다시 검증하세요.",
            "Another Validate runs ({path}).")
    PROCESS_ENDED = ("검증 프로세스가 결과 없이 끝났습니다 (종료 코드 {code})",
                     "the Validate process ended without an answer (exit status {code})")
    # the Validate buttons while one runs (autograder/patches: FILE_PATCHES)
    RUNNING = ("검증 중… (누르면 취소)", "Validating... (click to cancel)")
    CANCELLING = ("취소하는 중…", "Cancelling...")

    @classmethod
    def templates(cls) -> dict[str, str]:
        """Every text's Korean template (its format fields unfilled), by its name in lower case."""
        return {member.name.lower(): member._korean for member in cls}


class ListText(_Catalogue):
    """What the Assignment List of a student's JupyterLab on the hub says beyond nbgrader's own words
    (``autograder/hub/lab_assignments.py``, the list's file patch in ``autograder/patches``)."""

    DUE = ("마감 {when}", "due {when}")
    DOWNLOAD_SUBMISSION = ("제출본 내려받기", "download")
    NOT_SUBMITTED = ("제출하지 못했습니다", "Invalid Submission")
    NOT_SUBMITTED_WHY = ("제출물이 교환 서비스에 저장되지 않았습니다. 이유:", "Assignment not submitted:")
    SUBMIT_REFUSED = ("교환 서비스가 제출을 받지 않았습니다. 잠시 뒤에 다시 시도하고, 계속되면 조교에게 문의하세요.",
                      "the exchange did not take the submission")
    DOWNLOAD_REFUSED = ("제출본을 내려받지 못했습니다: {reason}", "the exchange refused the download: {reason}")
class LtiText(_Catalogue):
    """Why the hub refused a launch from the LMS (LTI 1.3, ``autograder/lti/login.py``): the hub's error page (the
    English, with the launch's details, goes to the hub's log)."""

    NOT_ON_ROSTER = ("LMS 계정({lms_id})이 이 강의의 수강 명단에 없어 로그인할 수 없습니다. 담당 교수자에게 명단 "
                     "등록을 요청하세요.", "{lms_id} is not on the roster")
    NO_ID = ("LMS가 로그인에 필요한 사용자 정보({claim})를 보내지 않았습니다. 담당 교수자에게 알려 주세요.",
             "the launch carries no {claim}")
    OTHER_DEPLOYMENT = ("이 허브에 등록되지 않은 LMS 연결에서 열었습니다. 강의 페이지의 JupyterHub 링크로 다시 "
                        "들어오세요.",
                        "a launch from another deployment of the tool")
