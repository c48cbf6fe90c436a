"""The student's process's policy is declared once (autograder/sandbox/policy.py) and the rules the graders apply
name only what the sandbox can report.

Fast checks, no student code: the forbidden-routine labels of every grader rule are labels the monitor in the
student's process can write (a label it can never write would be a rule that never fires), and both launchers build
the student's environment and limits from the same declarations.
"""
from __future__ import annotations

import os

import pytest

from autograder.graders import review
from autograder.sandbox import policy
from autograder.sandbox.inside import monitor, recognise, watched
from autograder.sandbox.inside.routines import Routine


def reportable_labels() -> set[str]:
    """What the monitor's own tables and wrappers can write: its kernel table, the code objects of
    ``routine_codes`` and the labels its scipy wrappers emit (run on a stand-in ``scipy.special``)."""
    import importlib
    import sys

    import keras  # noqa: F401 - its attention layers and ops are what routine_codes looks for

    for name in ("torch._refs", "torch._refs.nn.functional", "torch._refs.special", "torch._decomp.decompositions",
                 "torch._decomp.decompositions_for_jvp"):
        importlib.import_module(name)
    watched.import_watched()   # every module the watch knows routines of, as the lane imports them
    labels = set(watched.KERNEL_OPS.values()) | set(watched.routine_codes().values())

    class AnySpecial:
        def __getattr__(self, name):
            return lambda *args, **kwargs: None

    special, emitted = AnySpecial(), []
    saved = sys.modules.get("scipy.special")
    sys.modules["scipy.special"] = special
    try:
        monitor.watch_scipy(emitted.append, [])
    finally:
        if saved is None:
            del sys.modules["scipy.special"]
        else:
            sys.modules["scipy.special"] = saved
    for wrapped in vars(special).values():
        wrapped()
    return labels | {token.decode().strip() for token in emitted} | {watched.TAMPERED}   # ``monitor.verifier``


def test_the_declared_labels_are_what_the_monitor_writes():
    """``watched.LABELS`` is derived from the same tables the monitor reports from, not a list kept by hand."""
    assert reportable_labels() == set(watched.LABELS)


def test_the_routines_are_the_labels_the_monitor_can_report():
    """``Routine`` names every label the monitor writes and no other: a rule's run-time labels are ``Routine``
    members (``forbidden.Rule`` refuses anything else), so a rule can never name a label the monitor never writes
    (``torch:_softmax``: the monitor reports the kernel ``_softmax`` as ``torch:softmax``), which would forbid
    nothing."""
    assert watched.LABELS == {str(routine) for routine in Routine}
    assert all(type(label) is str for label in watched.LABELS)   # plain strings inside the sandbox


def test_one_environment_and_one_set_of_limits():
    env = policy.environment("/h", "/t")
    assert env == {**policy.ENVIRONMENT, "HOME": "/h", "TMPDIR": "/t",
                   **{k: v for k, v in env.items() if k in policy.PASSED_THROUGH}}
    assert not any(k.startswith("PYTHON") for k in env)   # python -I would ignore them
    limits = policy.Limits.from_course()
    assert limits.rlimits()["RLIMIT_AS"] == (limits.memory_mb << 20,) * 2
    assert set(limits.rlimits()) == {"RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NPROC", "RLIMIT_CORE"}


def test_the_inside_package_is_copied_anew_over_what_a_student_left(tmp_path):
    """A warm process (the nursery, a lane on its own) starts from a copy of ``autograder/sandbox/inside`` in its
    folder: a link or a planted module left there under that name is removed, never followed."""
    from autograder.sandbox.bubblewrap import INSIDE, copy_inside

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("grader's")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / INSIDE.name).symlink_to(elsewhere)
    copy = copy_inside(scratch)
    assert not copy.is_symlink() and (elsewhere / "keep.txt").read_text() == "grader's"
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in INSIDE.glob("*.py"))
    (copy / "planted.py").write_text("x = 1")
    copy = copy_inside(scratch)
    assert not (copy / "planted.py").exists()


@pytest.mark.parametrize("python", ["this-interpreter", "another-path"])
def test_the_sandbox_mounts_the_prefixes_a_fresh_interpreter_names(python, tmp_path):
    """The sandbox mounts the installation and the virtual environment of ``python -I``: for this interpreter they
    are read from this process (no interpreter started for them), for any other from a fresh ``python -I``. Both
    must name what a fresh ``python -I`` names (here: through a link to this interpreter, a path of its own)."""
    import subprocess
    import sys

    from autograder.sandbox.bubblewrap import prefixes

    executable = sys.executable
    if python == "another-path":
        executable = str(tmp_path / "python")
        os.symlink(sys.executable, executable)
    fresh = subprocess.run([executable, "-I", "-c", "import sys; print(sys.base_prefix); print(sys.prefix)"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert prefixes(executable) == fresh


@pytest.fixture()
def probe_module(tmp_path, monkeypatch):
    """A module that records, when imported, whether the collector was on."""
    import sys

    (tmp_path / "gc_probe_module.py").write_text("import gc\nCOLLECTING = gc.isenabled()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "gc_probe_module"
    sys.modules.pop("gc_probe_module", None)


@pytest.mark.parametrize("process", ["nursery", "grader"])
def test_a_warm_process_imports_with_the_collector_off_and_turns_it_on_again(process, probe_module, monkeypatch):
    """The warm processes (the nursery and a lane on its own: ``inside.lane._warm``; the grading process:
    ``grade.warm_up``) freeze what they import; while they import, the collector is off (its automatic collections
    walked keras's and torch's objects six times, ~0.6 s), and it is on again after, with no full collection on
    the way: the student's process and the graders run with it on."""
    import gc
    import sys

    from autograder import grade
    from autograder.sandbox.inside import lane

    monkeypatch.setenv("AUTOGRADER_NURSERY", "0")   # the grading process's warm-up without a nursery
    monkeypatch.setattr(grade, "GRADER_MODULES", ())
    monkeypatch.setattr(grade, "_pytest_plugins", lambda: [])
    gc.collect()   # counts at zero: nothing the warm-up allocates can start a full collection on its own
    generations = []

    def seen(phase, info):
        if phase == "start":
            generations.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        if process == "nursery":
            lane._warm((probe_module,))
        else:
            grade.warm_up(False, also=(probe_module,))
    finally:
        gc.callbacks.remove(seen)
        gc.unfreeze()
    assert sys.modules[probe_module].COLLECTING is False, "the collector was on while the warm process imported"
    assert gc.isenabled(), "the collector stayed off after the warm-up"
    assert 2 not in generations, f"collections of generations {generations}"


def test_the_guard_uses_no_global_or_builtin_when_student_code_runs():
    """The monitor's module globals and builtins are within the student's reach (the serve loop's frame is below
    every cell: ``sys._getframe(1).f_globals["guard"].__globals__``), and so are those of the modules it imports, so
    the code that runs after the guard is installed (the kernels, the probe, the emitters, the audit hook, and the
    recogniser's ``known`` and ``teach`` with what they call, the torch.fx watch's ``handle``) reads every name from its
    own closure: not one instruction of it loads
    a global or a builtin (catalogue: monitor_globals_cleared, monitor_emit_silenced)."""
    import dis

    def nested(code):
        for const in code.co_consts:
            if isinstance(const, type(code)):
                yield const
                yield from nested(const)

    code_type = type(monitor.guard.__code__)
    runtime = []   # the functions defined in the factories and all they contain (their comprehensions run at setup)
    for factory in (monitor.guard, monitor.audit_hook, monitor.signal_watch, monitor.guard_kernels, monitor.verifier,
                    monitor.source_watch, monitor.fx_watch, recognise.recogniser):
        for child in factory.__code__.co_consts:
            if isinstance(child, code_type) and not child.co_name.startswith("<"):
                runtime += [child, *nested(child)]
    assert {c.co_name for c in runtime} >= {"emitter", "emit", "foreign_handler", "probe", "make", "kernel",
                                            "reaches_guard", "hook", "known", "teach", "content", "constant", "verify",
                                            "changed", "opened", "copied", "handle", "in_progress", "taint",
                                            "taint_of", "gone"}
    loads = {c.co_name: sorted({i.argval for i in dis.get_instructions(c) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")})
             for c in runtime}
    assert not any(loads.values()), {name: names for name, names in loads.items() if names}


def test_every_review_the_monitor_reports_has_a_korean_line():
    """The audit hook's review kinds (``watched.REVIEWS``) are the ones the grader turns into Korean review lines."""
    assert set(review.RUNTIME_REVIEW) == set(watched.REVIEWS)


def test_the_sandbox_imports_nothing_above_it():
    """The layers of issue 24, for the bottom two: ``settings`` imports nothing of the package (the circle settings
    <-> sandbox is gone), the sandbox only ``settings``, ``messages`` and itself, and ``sandbox/inside`` nothing of
    ``autograder`` at all (it is copied into the sandbox whole). Every import counts, a function's own too."""
    import ast
    from pathlib import Path

    import autograder

    package = Path(autograder.__file__).parent

    def imported(path: Path) -> set[str]:
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                names.add("." * node.level + (node.module or ""))
        return {n for n in names if n.startswith("autograder") or n.startswith(".")}

    assert imported(package / "settings.py") == set()
    allowed = ("autograder.settings", "autograder.messages", "autograder.sandbox")
    for path in (package / "sandbox").rglob("*.py"):
        names = imported(path)
        if "inside" in path.parts:
            assert all(n.startswith(".") and not n.startswith("..") for n in names), (path, names)
        else:
            above = sorted(n for n in names if n != "autograder" and not n.startswith(allowed))
            assert not above, (path, above)
