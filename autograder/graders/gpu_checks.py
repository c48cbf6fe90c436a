"""Grader tests against the stored reference outputs of PyTorch (``gpu_refs``), next to the live checks.

A student's result is compared with every stored output of a case (each SDPA backend and dtype) and with its
float64 math reference, each with its own tolerance (``tolerances.against_gpu``). The Korean message of a
failure names what it was compared with: device, backend, dtype, max error, tolerance.
"""
from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from autograder.graders import diagnosis
from autograder.graders.compare import GradingFailure, as_array, expect_shape, max_error
from autograder.graders.gpu_refs import store
from autograder.graders.tolerances import GPU, STUDENT
from autograder.messages import Verdict


@cache
def graders_of_kinds() -> dict[str, str]:
    """``{stored case kind: exercise}`` as each grader declares it (``GPU_CASES`` at the top of
    ``graders/<assignment>/test_<exercise>.py``), read from the source without importing the graders."""
    found = {}
    for path in sorted(Path(__file__).parent.glob("*/test_*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "GPU_CASES" for t in node.targets):
                kinds = ast.literal_eval(node.value)
                for kind in (kinds,) if isinstance(kinds, str) else kinds:
                    found[kind] = path.stem[len("test_"):]
    return found


@cache
def cases(kind: str) -> list:
    return store.load_cases(kind)


def params(kind: str) -> list:
    """The stored cases of ``kind`` as pytest parameters (ids = case names)."""
    return [pytest.param(case.name, id=case.name) for case in cases(kind)]


def case(kind: str, name: str) -> store.Case:
    return next(c for c in cases(kind) if c.name == name)


def describe(kind: str) -> str:
    """'cpu (x86_64, AVX512) · 백엔드 math, flash · float32, float16, bfloat16' for a test's docstring."""
    found = cases(kind)
    devices = sorted({r.device for c in found for r in c.references})
    backends = sorted({r.backend for c in found for r in c.references})
    dtypes = [d for d in GPU if any(r.dtype == d for c in found for r in c.references)]
    return Verdict.STORED_OUTPUTS.korean(devices=", ".join(devices), backends=", ".join(backends),
                                         dtypes=", ".join(dtypes))


def expect_matches_references(got, reference_case: store.Case, what: str = "출력", call=None) -> float:
    """Check ``got`` against every stored output of the case; returns the largest error ratio (<= 1 passes)."""
    got = as_array(got, what)
    if reference_case.rows is None:
        rows = expect_shape(got, reference_case.float64.shape, what)
    else:  # long cases store a subset of the query rows
        expected = (*reference_case.float64.shape[:-2], int(reference_case.inputs["query"].shape[-2]),
                    reference_case.float64.shape[-1])
        rows = expect_shape(got, expected, what)[..., reference_case.rows, :]
    if not np.all(np.isfinite(rows)):
        raise GradingFailure(Verdict.STORED_NOT_FINITE.korean(what=what, case=reference_case.name),
                             diagnosis.of_output(got, call))
    failures, worst = [], 0.0
    checks = [("float64 math", reference_case.float64, STUDENT)]
    checks += [(r.describe_ko(), r.output, r.tolerance) for r in reference_case.references]
    for label, output, tol in checks:
        ratio = store.error_ratio(rows, output, tol)
        worst = max(worst, ratio)
        if ratio > 1:
            failures.append(Verdict.STORED_ONE.korean(label=label, error=max_error(rows, output),
                                                      tolerance=tol.describe()))
    if failures:
        found = diagnosis.of_output(got, call)
        more = Verdict.STORED_MORE.korean(count=len(failures) - 3) if len(failures) > 3 else ""
        shown = "; ".join(failures[:3]) + more
        message = Verdict.STORED_DIFFERS.korean(what=what, case=reference_case.name, failed=len(failures),
                                                checks=len(checks), shown=shown)
        raise GradingFailure(diagnosis.with_causes(message, found), found)
    return worst
