"""Validate in Korean, off the server's event loop: a Jupyter server extension of the hub's JupyterLab.

nbgrader's Validate (the notebook's toolbar button and the Assignment List's) posts the notebook to the server,
whose handler runs it in a kernel there and then, synchronously, on the server's one event loop: while a notebook
with an endless loop ran (each of its cells up to the course's cell limit), the student's whole JupyterLab stood
still (no save, no other notebook, no reply). Its answer is nbgrader's result: for every failing grade cell its
whole source and error, in English.

This extension serves the same URLs (``/assignments/validate``, ``/nbgrader_version``) and one more:

* Validate runs in a process of its own (``python -m <this module> <notebook>``: nbgrader's own validator, as
  nbgrader's handler runs it), which the server awaits without blocking: the lab stays usable meanwhile.
* The whole of it has a time limit (``c.KoreanValidateHandler.limit_s`` of the students' nbgrader config, read at
  every Validate; the hub writes the course's ``timeouts.validate_total``) and can be cancelled
  (``POST /assignments/validate/cancel``: the Validate button says "취소" while it runs; a closed tab cancels it
  too). Past the limit or cancelled, the process and its kernel are ended and the answer says so in Korean, with
  the cell that was running. One Validate at a time per server: another one meanwhile is answered at once.
* The answer has a Korean ``summary``: a title, a count, the error to fix first (the cell where the notebook first
  failed on its own, by its exercise and line: "`softmax` 해답 셀(3번째 코드 셀) 22번째 줄: 들여쓰기가 ..."), which
  later cells failed only because of it (a name it would have defined is missing), and one short line per grade
  cell ("✅ softmax 통과", "❌ causal_mask 실패: <the visible check's own message>", "📝 written_1: 제출한 뒤 손으로
  채점합니다"). Python's own error messages are said in Korean where they are known (syntax and indentation
  errors, an undefined name, a cell past its time), never as "(<tokenize>, line 26)".

nbgrader's answer (``value``) is left as it is: the lab extension (patched in the hub's environment to show a
``summary`` where there is one, ``autograder/patches``) falls back to nbgrader's dialog without it.

Runs in the hub's environment, which has no ``autograder`` package: ``python -m autograder hub`` copies this file
there as ``attention_course_lab.py``, writes its texts next to it (``attention_course_lab.json``, from
``autograder.messages.ValidateText``), enables it and disables nbgrader's ``validate_assignment`` extension
(``autograder/hub/environment.py``). It imports nothing of ``autograder`` (in the course's own environment, for the
tests, it reads the catalogue directly).
"""
from __future__ import annotations

import ast
import asyncio
import html
import json
import os
import re
import signal
import sys
import time
import traceback
from pathlib import Path

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from nbgrader import utils
from nbgrader.server_extensions.validate_assignment.handlers import NbGraderVersionHandler, ValidateAssignmentHandler
from nbgrader.validator import Validator
from tornado import web

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TAG = re.compile(r"<[^>]+>")
REASON_CHARS = 300
DEFAULT_LIMIT_S = 300.0          # where the nbgrader config sets no limit
STOP_GRACE_S = 5.0               # a stopped Validate's process may shut its kernel down this long, then is killed
STDERR_KEPT = 16_384             # bytes of the process's stderr kept for the server's log


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


# ------------------------------------------------------------------------------------------------ one cell's error
def error_output(cell):
    return next((o for o in cell.get("outputs", []) if o.output_type == "error"), None)


def where(cell, number: int, words: dict) -> str:
    """How the dialog names a code cell: "`softmax` 해답 셀(3번째 코드 셀)", "`softmax` 확인 셀(4번째 코드 셀)",
    "5번째 코드 셀"."""
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
    for prefix, key in (("solution_", "solution_cell"), ("test_", "check_cell")):
        if grade_id.startswith(prefix):
            return words[key].format(name=grade_id[len(prefix):], number=number)
    return words["code_cell"].format(number=number)


SYNTAX_MESSAGES = (          # Python's message (its start) -> the Korean template's key
    ("unindent does not match", "syntax_unindent"), ("unexpected indent", "syntax_unexpected_indent"),
    ("expected an indented block", "syntax_expected_indent"), ("inconsistent use of tabs", "syntax_tabs"),
    ("unterminated string", "syntax_string"), ("unterminated triple-quoted", "syntax_string"),
    ("EOL while scanning", "syntax_string"), ("was never closed", "syntax_not_closed"),
    ("unexpected EOF", "syntax_not_closed"), ("unmatched", "syntax_unmatched"),
    ("closing parenthesis", "syntax_unmatched"), ("expected ':'", "syntax_colon"),
    ("Perhaps you forgot a comma", "syntax_comma"), ("invalid syntax", "syntax_invalid"))
SYNTAX_WHERE = re.compile(r"\s*\((?:<[^>]*>|[^()]*\.py|[^()]*), line (\d+)\)\s*$")
CELL_LINE = re.compile(r"(?:Cell In ?\[[^\]]*\]|<ipython-input-[^>]*>|Input In \[[^\]]*\]), line (\d+)")
UNDEFINED = re.compile(r"name '(\w+)' is not defined|`(\w+)`이\(가\) [^\n]*정의되어 있지 않")


def described(output, words: dict) -> tuple[str, int | None]:
    """An error output in Korean, and the line of its cell where it happened (None: not known): "들여쓰기가 바깥
    블록의 어느 줄과도 맞지 않습니다 (IndentationError)", not "unindent does not match any outer indentation level
    (<tokenize>, line 26)"."""
    ename, evalue = output.get("ename", ""), plain(str(output.get("evalue", "")))
    trace = plain("\n".join(output.get("traceback", [])))
    line = None
    found = SYNTAX_WHERE.search(evalue) if ename in ("SyntaxError", "IndentationError", "TabError") else None
    if found:
        line, evalue = int(found.group(1)), evalue[:found.start()]
    else:
        found = CELL_LINE.search(trace)
        line = int(found.group(1)) if found else None
    if ename in ("SyntaxError", "IndentationError", "TabError"):
        key = next((k for start, k in SYNTAX_MESSAGES if start in evalue), None)
        text = words[key].format(ename=ename) if key else words["syntax_other"].format(ename=ename, message=evalue)
    elif ename == "NameError" and UNDEFINED.search(evalue):
        text = words["undefined_name"].format(name=missing_name(evalue))
    elif ename == "CellTimeoutError":
        text = words["cell_timeout"]
    else:
        text = words["runtime_error"].format(ename=ename, message=evalue)
    return (text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1] + "…"), line


def missing_name(text: str) -> str | None:
    found = UNDEFINED.search(text)
    return (found.group(1) or found.group(2)) if found else None


def check_failure(output) -> bool:
    """Whether an error is a visible check that failed on its own terms ("❌ name: ..."), not an error of code."""
    return "❌" in plain(str(output.get("evalue", ""))) or \
        any("❌" in plain(line) for line in output.get("traceback", []))


DEFINED = re.compile(r"^(?:async\s+def|def|class)\s+(\w+)|^(\w+)\s*(?::[^=]*)?=(?!=)|^import\s+(.+)|"
                     r"^from\s+\S+\s+import\s+\(?([^)]+)", re.M)


def defines(source: str) -> set[str]:
    """The names a code cell defines at its top level (functions, classes, assignments, imports), also where the
    cell does not parse (from its lines)."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        names = set()
        for match in DEFINED.finditer(code):
            if match.group(1) or match.group(2):
                names.add(match.group(1) or match.group(2))
            for part in (match.group(3) or match.group(4) or "").split(","):
                words = part.split()
                if words:
                    names.add(words[-1] if "as" in words else words[0].split(".")[0])
        return names
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            for child in ast.walk(node):
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                    names.add(child.id)
    return names


def failures(executed, words: dict) -> list[dict]:
    """Every code cell that ended in an error, in order: ``{"index", "where", "text", "line", "own", "missing",
    "root"}``; ``root`` is the index of the failure it follows from (a name that an earlier failed cell would have
    defined is missing: "NameError: name 'softmax' is not defined" after a syntax error in softmax's cell), its own
    index where it failed on its own."""
    found, number = [], 0
    for index, cell in enumerate(executed.cells):
        if cell.cell_type != "code":
            continue
        number += 1
        output = error_output(cell)
        if output is None:
            continue
        text, line = described(output, words)
        name = missing_name(f"{output.get('evalue', '')}\n{plain(chr(10).join(output.get('traceback', [])))}")
        origin = next((f for f in reversed(found) if name and name in defines(executed.cells[f["index"]].source)),
                      None)
        found.append({"index": index, "where": where(cell, number, words), "text": text, "line": line,
                      "check": check_failure(output), "missing": name if origin else None,
                      "root": origin["root"] if origin else index})
    return found


def at(failure: dict, words: dict) -> str:
    """A failure's cell and line: "`softmax` 해답 셀(3번째 코드 셀) 22번째 줄"."""
    return failure["where"] + (words["at_line"].format(line=failure["line"]) if failure["line"] else "")


def located(failure: dict, words: dict) -> str:
    """A failure's cell and line, and what went wrong there."""
    return f"{at(failure, words)}: {failure['text']}"


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


def summary(result: dict, executed, words: dict[str, str] | None = None) -> dict:
    """The dialog's content from nbgrader's ``result`` and the notebook as the validator ran it (``executed``; None
    where it did not run, e.g. a cell's type changed): ``{"title", "ok", "headline", "first", "items": [{"ok",
    "text"}], "note", "ok_label"}``. ``first``: the error to fix first (the first cell that failed on its own, not
    as a visible check's verdict) and the cells that failed only because of it; "" where there is none."""
    w = words or texts()
    if executed is None:                                # nbgrader stops before running: a cell's type changed
        changed = ", ".join((e.get("source") or "?").splitlines()[0][:40] for e in result.get("type_changed", []))
        return {"title": w["title"], "ok": False, "headline": w["type_changed"].format(names=changed), "first": "",
                "items": [], "note": "", "ok_label": w["ok"]}
    failed_cells = failures(executed, w)
    by_index = {f["index"]: f for f in failed_cells}
    roots = [f for f in failed_cells if f["root"] == f["index"] and not f["check"]]
    first = ""
    if roots:
        root = roots[0]
        first = w["first_error"].format(error=located(root, w))
        after = [f for f in failed_cells if f["root"] == root["index"] and f is not root]
        if after:
            names = sorted({f["missing"] for f in after if f["missing"]})
            first += " " + w["follows"].format(names=", ".join(f"`{n}`" for n in names), count=len(after),
                                cells=", ".join(f["where"] for f in after))
    items, note, passed, failed = [], "", 0, 0
    own = None                    # a failure of the exercise's own cells (since the grade cell before) on their own
    for index, cell in enumerate(executed.cells):
        if not utils.is_grade(cell):
            failure = by_index.get(index)
            if failure and failure["root"] == index and not failure["check"]:
                own = own or failure
            continue
        earlier, own = own, None
        score, max_score = utils.determine_grade(cell)
        if score is None:
            items.append({"ok": True, "text": w["by_hand"].format(name=exercise(cell))})
        elif score >= max_score and not (max_score == 0 and utils.has_failed(cell)):
            passed += 1
            items.append({"ok": True, "text": w["passed"].format(name=exercise(cell))})
        else:
            failed += 1
            mine = by_index.get(index)
            if earlier is not None:
                text = w["failed_earlier"].format(name=exercise(cell), where=at(earlier, w), reason=earlier["text"])
            elif mine is not None and mine["root"] != index:
                text = w["failed_because"].format(name=exercise(cell), where=by_index[mine["root"]]["where"],
                            missing=mine["missing"])
            elif mine is not None and not mine["check"]:
                text = w["failed"].format(name=exercise(cell), reason=located(mine, w))
            else:
                text = w["failed"].format(name=exercise(cell), reason=reason(cell))
            items.append({"ok": False, "text": text})
    if result.get("changed"):
        sources = {e["source"] for e in result["changed"]}
        names = [exercise(c) for c in executed.cells if "nbgrader" in c.metadata and c.source.strip() in sources]
        note = w["changed"].format(names=", ".join(names) or len(sources))
    ok = not failed and not result.get("changed")
    headline = w["all_passed"] if ok else w["counts"].format(passed=passed, failed=failed)
    return {"title": w["title"], "ok": ok, "headline": headline, "first": first, "items": items, "note": note,
            "ok_label": w["ok"]}


def stopped(words: dict, headline: str) -> dict:
    """The answer of a Validate that did not finish (past its limit, cancelled, refused, failed to run)."""
    return {"success": False, "value": headline,
            "summary": {"title": words["title"], "ok": False, "items": [], "note": "", "first": "",
                        "headline": headline, "ok_label": words["ok"]}}


# ------------------------------------------------------------------------------------------------ the Validate process
class RecordingValidator(Validator):
    """nbgrader's validator that keeps the notebook as it ran it (for the summary's per-cell scores)."""

    executed = None

    def _preprocess(self, nb):
        self.executed = super()._preprocess(nb)
        return self.executed


def load_config():
    """The nbgrader config as nbgrader's Validate handler loads it (the config path, then the server's folder)."""
    from jupyter_core.paths import jupyter_config_path
    from nbgrader.apps import NbGrader

    paths = jupyter_config_path()
    paths.insert(0, os.getcwd())
    app = NbGrader()
    app.config_file_paths.append(paths)
    app.load_config_file()
    return app.config


def limit_of(config) -> float:
    value = config.KoreanValidateHandler.get("limit_s") if "KoreanValidateHandler" in config else None
    try:
        return float(value) if value else DEFAULT_LIMIT_S
    except (TypeError, ValueError):
        return DEFAULT_LIMIT_S


def validate_in_this_process(path: str, say) -> None:
    """What the Validate process does (``main``): nbgrader's validator on ``path`` with the server's nbgrader
    config; ``say(dict)`` reports the time limit, each code cell as it starts, and at last the answer."""
    import nbformat
    from nbgrader.nbgraderformat import SchemaTooNewError, SchemaTooOldError

    words = texts()
    config = load_config()
    say({"limit": limit_of(config)})
    try:
        nb = nbformat.read(path, as_version=4)
        names, number = {}, 0
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                number += 1
                names[index] = where(cell, number, words)
    except Exception:  # noqa: BLE001  (the validator reads it again and says what is wrong)
        names = {}

    def started(cell, cell_index, **_):
        say({"cell": names.get(cell_index, "")})

    config.Execute.on_cell_execute = started
    try:
        validator = RecordingValidator(config=config)
        result = validator.validate(path)
    except (SchemaTooOldError, SchemaTooNewError, Exception) as error:  # noqa: BLE001 (as nbgrader's handler)
        reply = stopped(words, words["not_run"].format(reason=f"{type(error).__name__}: {error}"[:REASON_CHARS]))
        reply["value"] = traceback.format_exc()
        say({"reply": reply})
        return
    say({"reply": {"success": True, "value": result, "summary": summary(result, validator.executed, words)}})


def main(argv=None) -> int:
    """``python -m <this module> NOTEBOOK``: one Validate, its reports as JSON lines on stdout (anything else the
    validator or a library prints goes to stderr)."""
    args = sys.argv[1:] if argv is None else argv
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)                                 # stray prints cannot break the reports

    def say(message: dict) -> None:
        channel.write(json.dumps(message, ensure_ascii=False) + "\n")
        channel.flush()

    # Stopped (past its limit, cancelled): exit through Python, so that nbclient's exit hook shuts its kernel down.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    validate_in_this_process(args[0], say)
    return 0


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (its kernel runs in a session of its own: not in its process group)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


class Run:
    """One Validate process, awaited without blocking the server: its limit, the cell it runs, and its end."""

    def __init__(self, path: str):
        self.path, self.cell, self.why_stopped = path, "", None
        self.limit = DEFAULT_LIMIT_S
        self.proc = None
        self.stderr = b""

    async def start(self) -> None:
        module = __spec__.name if __spec__ else Path(__file__).stem
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", module, self.path, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, limit=1 << 26)
        self.started = time.monotonic()
        self.drain = asyncio.ensure_future(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        while chunk := await self.proc.stderr.read(65536):
            self.stderr = (self.stderr + chunk)[-STDERR_KEPT:]

    async def reply(self) -> dict | None:
        """The process's answer, or None where it was stopped (``why_stopped``: "limit", "cancelled", "closed") or
        ended without one. The limit is the one the process reports from the nbgrader config."""
        limit = DEFAULT_LIMIT_S
        while True:
            left = self.started + limit - time.monotonic()
            if left <= 0:
                await self.stop("limit")
                return None
            try:
                line = await asyncio.wait_for(self.proc.stdout.readline(), left)
            except asyncio.TimeoutError:
                continue
            if not line:                                    # ended: finished, stopped or died
                await self.proc.wait()
                return None
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "limit" in message:
                limit = float(message["limit"])
                self.limit = limit
            elif "cell" in message:
                self.cell = message["cell"]
            elif "reply" in message:
                await self.proc.wait()
                return None if self.why_stopped else message["reply"]

    async def stop(self, why: str) -> None:
        """End the process and everything it started: its kernel (and what that started) killed first, then the
        process asked to exit (it removes the kernel's files), killed after ``STOP_GRACE_S``."""
        if self.why_stopped is None:
            self.why_stopped = why
        if self.proc is None or self.proc.returncode is not None:
            return
        for pid in descendants(self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(self.proc.wait(), STOP_GRACE_S)
        except (ProcessLookupError, asyncio.TimeoutError):
            for pid in [*descendants(self.proc.pid), self.proc.pid]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        await self.proc.wait()


class KoreanValidateHandler(ValidateAssignmentHandler):
    """nbgrader's ``/assignments/validate`` (same checks, same answer) in a process of its own, with a limit,
    a cancel and the Korean ``summary``."""

    runs: dict = {}                # path -> Run: the Validate of this server (one at a time)

    def target(self, path: str) -> str:
        root = Path(self.root_dir).resolve()
        target = (root / path).resolve()
        if not target.is_relative_to(root):             # as nbgrader's own handler
            raise web.HTTPError(403, "Access denied: path outside allowed directory")
        return str(target)

    @web.authenticated
    async def post(self):
        try:
            path = self.get_argument("path")
        except web.MissingArgumentError:
            path = (self.get_json_body() or {}).get("path", "")
        target = self.target(path)
        self.finish(json.dumps(await self.validate_notebook_async(target), ensure_ascii=False))

    async def validate_notebook_async(self, target: str) -> dict:
        words = texts()
        busy = next(iter(self.runs), None)
        if busy is not None:
            return stopped(words, words["busy"].format(path=os.path.relpath(busy, self.root_dir)))
        run = self.run = Run(target)
        self.runs[target] = run
        try:
            await run.start()
            reply = await run.reply()
        except Exception as error:  # noqa: BLE001  (the process could not start: the student reads why)
            self.log.error(traceback.format_exc())
            await run.stop("failed")
            return stopped(words, words["not_run"].format(reason=f"{type(error).__name__}: {error}"))
        finally:
            self.runs.pop(target, None)
        if reply is not None and run.why_stopped is None:
            return reply
        running = words["was_running"].format(where=run.cell) if run.cell else words["was_starting"]
        if run.why_stopped == "limit":
            return stopped(words, words["time_limit"].format(seconds=f"{run.limit:g}", running=running))
        if run.why_stopped in ("cancelled", "closed"):
            return stopped(words, words["cancelled"].format(running=running))
        self.log.error("Validate of %s ended without an answer (exit status %s): %s", target,
                       run.proc.returncode, run.stderr.decode(errors="replace")[-4000:])
        return stopped(words, words["not_run"].format(reason=words["process_ended"].format(
                                                                    code=run.proc.returncode)))

    def on_connection_close(self):
        run = getattr(self, "run", None)
        if run is not None:                     # the tab was closed or reloaded: nobody reads the answer
            asyncio.ensure_future(run.stop("closed"))

class CancelValidateHandler(JupyterHandler):
    """``POST /assignments/validate/cancel`` (``path``: the notebook; none: any): ends the Validate that runs;
    its own request is then answered that it was cancelled. Answers ``{"cancelled": true|false}``."""

    @web.authenticated
    async def post(self):
        try:
            path = self.get_argument("path")
        except web.MissingArgumentError:
            path = (self.get_json_body() or {}).get("path", "") if self.request.body else ""
        root = Path(self.settings["root_dir"]).resolve()
        wanted = str((root / path).resolve()) if path else None
        runs = [run for key, run in list(KoreanValidateHandler.runs.items()) if wanted in (None, key)]
        for run in runs:
            await run.stop("cancelled")
        self.finish(json.dumps({"cancelled": bool(runs)}))



def _jupyter_server_extension_points():
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp):
    webapp = serverapp.web_app
    base_url = webapp.settings["base_url"]
    webapp.settings["root_dir"] = serverapp.root_dir
    webapp.add_handlers(".*$", [(url_path_join(base_url, "/assignments/validate"), KoreanValidateHandler),
                                (url_path_join(base_url, "/assignments/validate/cancel"), CancelValidateHandler),
                                (url_path_join(base_url, "/nbgrader_version"), NbGraderVersionHandler)])
    serverapp.log.info("Validate in a process of its own, with a Korean summary per exercise (attention course)")


if __name__ == "__main__":
    sys.exit(main())
