"""Validate in Korean, one line per exercise: a Jupyter server extension of the hub's JupyterLab.

nbgrader's Validate (the notebook's toolbar button and the Assignment List's) posts the notebook to the server,
which runs it and answers with nbgrader's result: for every failing grade cell its whole source and error, which
nbgrader's lab extension shows under "Validation Results / The following cell failed:" (20 KB for a fresh
``attention``), without saying which exercises passed. This extension serves the same URL
(``/assignments/validate``, and ``/nbgrader_version`` beside it) with nbgrader's own handler and validator, and adds
a ``summary`` to the answer: a title, a count, and one short line per grade cell ("✅ softmax 통과", "❌ causal_mask
실패: <the visible check's own message>", or the error of the cell above that failed first: "❌ softmax 실패: 3번째 코드
셀에서 먼저 오류가 났습니다: IndentationError: ...", "📝 written_1: 제출한 뒤 손으로 채점합니다"), in Korean. nbgrader's
answer is left as it is: the lab extension (patched in the hub's environment to show a ``summary`` where there is
one, ``autograder/patches``) falls back to nbgrader's dialog without it.

Runs in the hub's environment, which has no ``autograder`` package: ``python -m autograder hub`` copies this file
there as ``attention_course_lab.py``, writes its texts next to it (``attention_course_lab.json``, from
``autograder.messages.ValidateText``), enables it and disables nbgrader's ``validate_assignment`` extension
(``autograder/hub/environment.py``). It imports nothing of ``autograder`` (in the course's own environment, for the
tests, it reads the catalogue directly).
"""
from __future__ import annotations

import html
import json
import re
import traceback
from pathlib import Path

from jupyter_server.utils import url_path_join
from nbgrader import utils
from nbgrader.nbgraderformat import SchemaTooNewError, SchemaTooOldError
from nbgrader.server_extensions.validate_assignment.handlers import NbGraderVersionHandler, ValidateAssignmentHandler
from nbgrader.validator import Validator
from tornado import web

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TAG = re.compile(r"<[^>]+>")
REASON_CHARS = 300


def texts() -> dict[str, str]:
    """The Korean templates: the JSON the hub writes next to this file, else the catalogue (course environment)."""
    written = Path(__file__).with_suffix(".json")
    if written.is_file():
        return json.loads(written.read_text(encoding="utf-8"))
    from autograder.messages import ValidateText

    return ValidateText.templates()


def exercise(cell) -> str:
    """The exercise a grade cell checks: its grade id without nbgrader's ``test_`` prefix."""
    grade_id = cell.metadata.nbgrader.get("grade_id", "?")
    return grade_id[5:] if grade_id.startswith("test_") else grade_id


def plain(text: str) -> str:
    return html.unescape(TAG.sub("", ANSI.sub("", text)))


def reason(cell) -> str:
    """The one line that says why a grade cell failed: the visible check's "❌ name: ..." (its assertion message or
    its note on a student's exception), else the error's last line."""
    lines = []
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            lines += [f"{output.ename}: {output.evalue}"] + plain("\n".join(output.traceback)).splitlines()
        elif output.output_type == "stream" and output.name == "stderr":
            lines += plain(output.text).splitlines()
    marked = [line[line.index("❌"):].strip() for line in lines if "❌" in line]
    line = marked[-1] if marked else next((x.strip() for x in lines if x.strip()), "")
    line = re.sub(r"^❌\s*[^:\s]+:\s*", "", line)           # the name is already in the list's line
    return line if len(line) <= REASON_CHARS else line[:REASON_CHARS - 1] + "…"


def cell_error(cell) -> str:
    """A code cell's own error on one line ("IndentationError: unexpected indent (4번째 줄)"; "" where it ran)."""
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            where = re.search(r"\bline (\d+)", plain("\n".join(output.traceback)))
            line = f"{output.ename}: {output.evalue}" + (f" ({where.group(1)}번째 줄)" if where else "")
            return line if len(line) <= REASON_CHARS else line[:REASON_CHARS - 1] + "…"
    return ""


def undefined(cell) -> bool:
    """Whether a failed check met a name that is not defined (what an earlier cell that failed leaves behind)."""
    text = "\n".join(f"{o.get('ename', '')} {o.get('evalue', '')} {plain(chr(10).join(o.get('traceback', [])))}"
                      if o.output_type == "error" else plain(o.get("text", ""))
                      for o in cell.get("outputs", []) if o.output_type in ("error", "stream"))
    return "NameError" in text or "정의되어 있지 않" in text


def summary(result: dict, executed, words: dict[str, str] | None = None) -> dict:
    """The dialog's content from nbgrader's ``result`` and the notebook as the validator ran it (``executed``; None
    where it did not run, e.g. a cell's type changed): ``{"title", "ok", "headline", "items": [{"ok", "text"}],
    "note", "ok_label"}``."""
    w = words or texts()
    if executed is None:                                # nbgrader stops before running: a cell's type changed
        changed = ", ".join((e.get("source") or "?").splitlines()[0][:40] for e in result.get("type_changed", []))
        return {"title": w["title"], "ok": False, "headline": w["type_changed"].format(names=changed), "items": [],
                "note": "", "ok_label": w["ok"]}
    items, note, passed, failed = [], "", 0, 0
    # the cell that failed first: of the exercise's own cells (since the grade cell before), else of any cell above
    # when the check only met a name that cell would have defined (an IndentationError in a solution cell is
    # reported as such, not as "NameError: softmax")
    first, since, code_cells = None, None, 0
    for cell in executed.cells:
        if not utils.is_grade(cell):
            if cell.cell_type == "code":
                code_cells += 1
                error = cell_error(cell)
                if error:
                    where = w["code_cell"].format(number=code_cells)
                    first, since = first or (where, error), since or (where, error)
            continue
        if cell.cell_type == "code":
            code_cells += 1
        earlier, since = since, None
        score, max_score = utils.determine_grade(cell)
        if score is None:
            items.append({"ok": True, "text": w["by_hand"].format(name=exercise(cell))})
        elif score >= max_score and not (max_score == 0 and utils.has_failed(cell)):
            passed += 1
            items.append({"ok": True, "text": w["passed"].format(name=exercise(cell))})
        else:
            failed += 1
            earlier = earlier or (first if undefined(cell) else None)
            text = (w["failed_earlier"].format(name=exercise(cell), where=earlier[0], reason=earlier[1]) if earlier
                    else w["failed"].format(name=exercise(cell), reason=reason(cell)))
            items.append({"ok": False, "text": text})
    if result.get("changed"):
        sources = {e["source"] for e in result["changed"]}
        names = [exercise(c) for c in executed.cells if "nbgrader" in c.metadata and c.source.strip() in sources]
        note = w["changed"].format(names=", ".join(names) or len(sources))
    ok = not failed and not result.get("changed")
    headline = w["all_passed"] if ok else w["counts"].format(passed=passed, failed=failed)
    return {"title": w["title"], "ok": ok, "headline": headline, "items": items, "note": note,
            "ok_label": w["ok"]}


class RecordingValidator(Validator):
    """nbgrader's validator that keeps the notebook as it ran it (for the summary's per-cell scores)."""

    executed = None

    def _preprocess(self, nb):
        self.executed = super()._preprocess(nb)
        return self.executed


class KoreanValidateHandler(ValidateAssignmentHandler):
    """nbgrader's ``/assignments/validate`` (same checks, same answer) with the Korean ``summary`` added."""

    def validate_notebook(self, path):
        root = Path(self.root_dir).resolve()
        target = (root / path).resolve()
        if not target.is_relative_to(root):                 # as nbgrader's own handler
            raise web.HTTPError(403, "Access denied: path outside allowed directory")
        words = texts()
        try:
            validator = RecordingValidator(config=self.load_config())
            result = validator.validate(str(target))
        except (SchemaTooOldError, SchemaTooNewError) as error:
            self.log.error(traceback.format_exc())
            return self.not_run(words, f"{type(error).__name__}: {error}", traceback.format_exc())
        except Exception as error:  # noqa: BLE001  (nbgrader's handler answers every error the same way)
            self.log.error(traceback.format_exc())
            return self.not_run(words, f"{type(error).__name__}: {error}", traceback.format_exc())
        return {"success": True, "value": result, "summary": summary(result, validator.executed, words)}

    @staticmethod
    def not_run(words: dict, why: str, value: str) -> dict:
        return {"success": False, "value": value,
                "summary": {"title": words["title"], "ok": False, "items": [], "note": "",
                            "headline": words["not_run"].format(reason=why[:REASON_CHARS]), "ok_label": words["ok"]}}


def _jupyter_server_extension_points():
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp):
    webapp = serverapp.web_app
    base_url = webapp.settings["base_url"]
    webapp.settings["root_dir"] = serverapp.root_dir
    webapp.add_handlers(".*$", [(url_path_join(base_url, "/assignments/validate"), KoreanValidateHandler),
                                (url_path_join(base_url, "/nbgrader_version"), NbGraderVersionHandler)])
    serverapp.log.info("Validate answers with a Korean summary per exercise (attention course)")
