"""The tolerance policy against the stored references: correct answers pass every backend and dtype, and no
backend's or dtype's tolerance lets a mistake through that the float64 reference catches: a mistake caught on a
case by the float64 reference is caught there by every stored output. (Mistakes the stored inputs cannot show at
all, such as a wrong dtype, a top-left mask on square inputs or a materialised score matrix, are caught by the
live graders; their tests prove it.)"""
import pytest

from tests.helpers import notebooks
from scripts.gpu_refs import audit


def namespace(source: str) -> dict:
    ns: dict = {}
    exec(compile(source, "<implementation>", "exec"), ns)
    return ns


def notebook_namespace(assignment: str) -> dict:
    """The source notebook's code cells run in order (grade cells left out; a failing demo cell is skipped)."""
    import contextlib
    import io

    import matplotlib

    matplotlib.use("Agg")
    ns: dict = {}
    for cell in notebooks.solution_notebook(assignment).cells:
        meta = notebooks._meta(cell)
        if cell.cell_type != "code" or (meta.get("grade") and not meta.get("solution")):
            continue
        with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()):
            exec(compile(cell.source, "<cell>", "exec"), ns)
    return ns


def correct_implementations() -> dict:
    """exercise -> {label: function}: the source solutions and every alternative implementation."""
    found: dict = {}
    for assignment in ("attention", "kv_cache"):
        spaces = {f"{assignment}:solution": notebook_namespace(assignment)}
        spaces.update({name: namespace(notebooks.implementation(name))
                       for name in notebooks.implementations(assignment)})
        for label, ns in spaces.items():
            for exercise in set(audit.EXERCISE.values()):
                if callable(ns.get(exercise)):
                    found.setdefault(exercise, {})[label] = ns[exercise]
    return found


@pytest.fixture(scope="module")
def correct_rows():
    return audit.audit(correct_implementations())


def test_correct_answers_pass_every_backend_and_dtype(correct_rows):
    assert correct_rows
    failing = [r for r in correct_rows if not r.passed]
    assert not failing, "\n".join(f"{r.implementation} {r.case} {r.backend}/{r.dtype}: err {r.max_error:.3g} "
                                  f"ratio {r.ratio:.2f}" for r in failing[:20])


def test_no_tolerance_lets_a_mistake_through():
    rows = audit.audit(audit.mistakes_by_exercise())
    assert rows
    by_case: dict = {}
    for r in rows:
        by_case.setdefault((r.implementation, r.case), []).append(r)
    caught_somewhere, leaks = set(), []
    for (mistake, case), case_rows in by_case.items():
        reference = next(r for r in case_rows if r.dtype == "float64 (ref)")
        if reference.passed:
            continue  # these inputs do not show this mistake at all
        caught_somewhere.add(mistake)
        leaks += [f"{mistake} {case} {r.backend}/{r.dtype} (ratio {r.ratio:.2f})" for r in case_rows if r.passed]
    assert not leaks, "a stored output's tolerance lets a mistake through:\n" + "\n".join(leaks)
    assert len(caught_somewhere) >= 20, sorted(caught_somewhere)
