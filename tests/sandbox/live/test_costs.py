"""What one mistake may cost (issue 13, point 5): its own points, once, fast.

Each entry of ``catalogue.COSTS`` is graded from the submitted file as ``python -m autograder grade`` does, with the
shortened timeouts of the other faults, and must:

* cost the broken function its own points and nothing else (``spares=()``: the exercises whose code calls it are
  graded with the reference in its place and keep their honest score), with the Korean message (and, where the
  entry says so, the note that the calling exercise would fail in the real notebook);
* wait out a time limit at most once per broken function (``waits``) and restart the student's process at most
  ``restarts`` times while the graders run (a hung call is interrupted and its function is not called again);
* keep the student's calls within the submission's time budget (``timeouts["calls"]``), however slow each is.

The grading time of each entry is printed in the catalogue's report; ``benchmarks/worst_case.py`` measures them
with the course's own timeouts.
"""
from __future__ import annotations

import time

import pytest

from tests.sandbox.live import catalogue
from tests.sandbox.live.harness import (GraderPeak, bounds, describe, grade_file, judge, wait_lane_quiet,
                                        write_submission)
from autograder.sandbox import bubblewrap
from autograder.report import exercise_report
from autograder.sandbox.errors import Failure, StudentCodeError
from autograder.sandbox.process import StudentProcess
from autograder.sandbox.remote import RemoteCalls

pytestmark = pytest.mark.slow


@pytest.fixture
def watch(monkeypatch):
    """Counts, while the graders run: requests that ended in a timeout after waiting (``waits``), the seconds
    of every request (``seconds``) and the process's restarts (``restarts``, read before it is cleaned up)."""
    seen = {"waits": 0, "seconds": 0.0, "requests": 0, "restarts": 0}
    request, cleanup, start_ = RemoteCalls.request, StudentProcess.cleanup, StudentProcess.start

    def counted(self, header, *args, **kwargs):
        start = time.perf_counter()
        try:
            return request(self, header, *args, **kwargs)
        except StudentCodeError as exc:
            if exc.kind is Failure.TIMEOUT and time.perf_counter() - start > 0.5:
                seen["waits"] += 1
            raise
        finally:
            seen["seconds"] += time.perf_counter() - start
            seen["requests"] += 1

    def started(self, *args, **kwargs):
        try:
            return start_(self, *args, **kwargs)
        finally:
            self.restarts_before_graders = self.restarts   # cells of the notebook that crashed it are not counted

    def cleaned(self):
        seen["restarts"] += self.restarts - getattr(self, "restarts_before_graders", 0)
        return cleanup(self)

    monkeypatch.setattr(StudentProcess, "start", started)
    monkeypatch.setattr(RemoteCalls, "request", counted)
    monkeypatch.setattr(StudentProcess, "cleanup", cleaned)
    return seen


@pytest.mark.parametrize("cost", [pytest.param(c, id=c.entry.id) for c in catalogue.COSTS])
def test_a_mistake_costs_its_own_points_once(cost, ctx, honest, short_timeouts, watch, tmp_path):
    assert bubblewrap.sandboxed() is True
    # Every demo cell of these notebooks may hang: each costs "cell", all of them "notebook" at most (softmax's faults
    # hang four demo cells: "notebook" stays 10, or the cells after them would not run). The budgets of one function's
    # calls and of all calls ("exercise", "calls") are as short as an honest submission leaves room for: its calls
    # need ~1 s (2-3 s on a loaded machine), and a fault's one wait (call_floor, 2 s) comes on top. The 1.5 s sleeps
    # of every_exercise_slow still exhaust both (two calls of one function, five functions of all), and
    # every_exercise_hangs the calls' budget (four waits of call_floor).
    short_timeouts.update({"cell": 2.5, "notebook": 10, "exercise": 3.0, "calls": 8.0})
    entry = cost.entry
    honest_scores = {e.name: e.score for e in honest.exercises}
    path = write_submission(entry.build(ctx), tmp_path)
    start = time.perf_counter()
    with GraderPeak() as peak:
        result = grade_file(path)
    seconds = time.perf_counter() - start
    scores = {e.name: e.score for e in result.exercises}
    wrong = judge(entry, scores, honest_scores)
    wrong.update({n: (scores.get(n), f"< {honest_scores[n]}") for n in cost.loses
                  if not scores.get(n, 0) < honest_scores[n]})
    text = "\n".join(exercise_report(e, result.notebook_errors) for e in result.exercises)
    missing = catalogue.lacking(entry, text)
    budget = float(short_timeouts.get("calls", float("inf")))
    slack = float(short_timeouts.get("call_floor", short_timeouts["call"])) + 1.0 + 0.05 * watch["requests"]
    outcome = (describe(entry, scores, honest_scores, wrong) + f"; {seconds:.1f} s (graders: student calls "
               f"{watch['seconds']:.1f} s over {watch['requests']} requests, limits waited out {watch['waits']}, "
               f"restarts {watch['restarts']})")
    max_seconds, max_mb = bounds(entry)
    over = (watch["waits"] > cost.waits or watch["restarts"] > cost.restarts or watch["seconds"] > budget + slack
            or seconds > max_seconds or peak.mb > max_mb)
    catalogue.REPORT.record(entry, outcome + ("; feedback lacks " + str(missing) if missing else ""),
                            changed=bool(wrong or missing or over), seconds=seconds, grader_mb=peak.mb)

    assert not wrong, f"{entry.id}: {outcome}\n{text}"
    assert not missing, f"{entry.id}: the feedback does not say {missing}:\n{text}"
    assert watch["waits"] <= cost.waits, f"{entry.id}: a time limit was waited out {watch['waits']} times: {outcome}"
    assert watch["restarts"] <= cost.restarts, f"{entry.id}: {watch['restarts']} restarts: {outcome}"
    assert watch["seconds"] <= budget + slack, f"{entry.id}: the student's calls took {watch['seconds']:.1f} s"
    assert seconds <= max_seconds, f"{entry.id}: graded in {seconds:.0f} s, over its bound of {max_seconds:g} s"
    assert peak.mb <= max_mb, f"{entry.id}: the grader's memory grew by {peak.mb:.0f} MiB (at most {max_mb:g})"
    assert not wait_lane_quiet(), f"{entry.id}: student processes outlived the grading"


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.id) for e in catalogue.QUIZ_ATTACKS])
def test_a_value_is_read_within_the_budget(entry, ctx, tmp_path):
    """Quiz answers are read (``Student.value``) without running the student's code: objects that only pose as
    torch tensors (their ``detach`` and ``__str__`` sleep) are no numbers and score 0, and reading them all stays
    within the submission's budget for its calls; graded with the course's own timeouts."""
    import nbformat

    from autograder.grade import grade_submission
    from autograder.submission.notebook import collect_file
    from tests.sandbox.live.harness import SEED

    assert bubblewrap.sandboxed() is True
    path = tmp_path / "quiz.ipynb"
    nbformat.write(entry.build(ctx), str(path))
    start = time.perf_counter()
    with GraderPeak() as peak:
        result = grade_submission(collect_file(path, "quiz"), SEED)
    seconds = time.perf_counter() - start
    max_seconds, max_mb = bounds(entry)
    outcome = f"quiz {result.score:g}/{result.max_score:g}; {seconds:.1f} s, grader +{peak.mb:.0f} MiB"
    catalogue.REPORT.record(entry, outcome, changed=bool(result.score or seconds > max_seconds or peak.mb > max_mb),
                            gained=bool(result.score), seconds=seconds, grader_mb=peak.mb)
    assert result.score == 0 < result.max_score, outcome
    assert seconds <= max_seconds, f"{entry.id}: {outcome}"
    assert peak.mb <= max_mb, f"{entry.id}: {outcome}"
    assert not wait_lane_quiet(), f"{entry.id}: student processes outlived the grading"


def test_a_kept_proxy_gives_nothing_away(ctx, honest, short_timeouts, tmp_path):
    """A student who keeps the reference proxy of ``softmax`` (met inside ``scaled_dot_product_attention``) and
    calls it from their own ``softmax`` later gets no reference answer: the grader answers a proxy only for the
    names allowed to the call in flight."""
    from tests.helpers import notebooks

    sdpa = '''
import numpy as np
_kept = []

def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    _kept.append(softmax)                       # the proxy, during this call
    q, k, v = np.asarray(query), np.asarray(key), np.asarray(value)
    scores = q @ np.swapaxes(k, -1, -2) * q.shape[-1] ** -0.5
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    weights = softmax(scores, axis=-1)
    out = weights @ v
    return (out, weights) if return_weights else out
'''
    steal = '''
import numpy as np

def softmax(x, axis=-1):
    kept = [f for f in _kept if f is not softmax]
    if kept:
        return kept[-1](x, axis=axis)          # the proxy kept from another exercise's call
    return np.zeros(np.shape(x))
'''
    nb = notebooks.with_code(ctx.solution, {"scaled_dot_product_attention": sdpa, "softmax": steal})
    result = grade_file(write_submission(nb, tmp_path))
    scores = {e.name: e.score for e in result.exercises}
    assert scores["softmax"] == 0, [t.message for t in result.exercise("softmax").tests]
    assert scores["scaled_dot_product_attention"] == result.exercise("scaled_dot_product_attention").max_score
