"""nbgrader integration: the notebook's own execution, in the sandbox, shared with the hidden graders.

Replaces nbgrader's ``Execute`` in ``c.Autograde.autograde_preprocessors``. The submission's code cells (every
code cell but the grade cells, whose verdict the hidden graders write) run once, in the sandboxed student process
of the grading lane; their outputs come back as plain data and are written into the cells. The same process then
answers the hidden graders (handed to ``HiddenGraders`` in ``resources``: ``handoff.RanInSandbox``), so the
student's code is neither run twice nor ever run outside the sandbox.

Outputs from the sandbox are untrusted data: only text streams, plain-text results, PNG images and error texts are
accepted (no HTML or JavaScript can reach the feedback), each capped in size.
"""
from __future__ import annotations

import base64
import binascii

from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor

from autograder.graders.registry import exercises_of
from autograder.grade import start_student, warm_up
from autograder.gradebook.preprocessors.handoff import RanInSandbox
from autograder.sandbox import bubblewrap, lanes
from autograder.sandbox.policy import Limits
from autograder.submission.notebook import collect

MAX_PNG = 2 << 20


def to_nbformat(raw: dict, limit: int):
    """One output from the sandbox as an nbformat output, or None when it is not of an accepted shape."""
    if not isinstance(raw, dict):
        return None
    kind = raw.get("output_type")
    text = lambda key: str(raw.get(key, ""))[:limit]  # noqa: E731
    if kind == "stream" and raw.get("name") in ("stdout", "stderr"):
        return new_output("stream", name=raw["name"], text=text("text"))
    if kind == "execute_result":
        return new_output("execute_result", data={"text/plain": text("text")})
    if kind == "display_data" and isinstance(raw.get("png"), str) and len(raw["png"]) < MAX_PNG:
        try:
            base64.b64decode(raw["png"], validate=True)
        except (binascii.Error, ValueError):
            return None
        return new_output("display_data", data={"image/png": raw["png"], "text/plain": "<그림>"})
    if kind == "error":
        trace = [str(line)[:500] for line in raw.get("traceback", [])[:10] if isinstance(line, str)]
        return new_output("error", ename=text("ename"), evalue=text("evalue"), traceback=trace)
    return None


class SandboxedExecute(NbGraderPreprocessor):
    """Run the submission's code cells in the sandbox and record their outputs (instead of a Jupyter kernel)."""

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        assignment = info.get("assignment")
        if not assignment or not exercises_of(assignment):
            raise ValueError(f"no hidden graders for assignment {assignment!r}")
        limit = Limits.from_course().output_kb * 1024
        submission = collect(nb, f"{info.get('notebook', assignment)}.ipynb", assignment)
        sandboxed = bubblewrap.sandboxed()
        if not lanes.has_lane(sandboxed):   # the first submission of a plain `nbgrader autograde`
            warm_up(sandboxed, assignment=assignment)
        ran = start_student(submission, capture=True)
        reports = ran.process.cell_results
        for count, (index, report) in enumerate(zip(submission.code_indices, reports, strict=False), start=1):
            cell = nb.cells[index]
            outputs = [o for o in (to_nbformat(raw, limit) for raw in report.get("outputs", [])) if o]
            for output in outputs:
                if output.output_type == "execute_result":
                    output.execution_count = count
            cell.outputs, cell.execution_count = outputs, count
        RanInSandbox(ran.submission, ran.process, ran.errors).put(resources)
        self.log.info("Ran %d code cells of %s in the sandbox (%d with errors)", len(reports), info.get("notebook"),
                      sum(not r.get("ok") for r in reports))
        return nb, resources
