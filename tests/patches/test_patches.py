"""nbgrader's code as the course changes it (autograder/patches), and the Korean Validate summary
(autograder/hub/lab_validate.py), without a hub: the file patches against the installed upstream files (this test
fails when nbgrader is upgraded and a patched file changes), applied to a copy only; formgrader's totals net of
late penalties on a real gradebook; the Validate summary of an executed notebook."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import patches, settings
from autograder.patches.environment import apply_file_patches, patch_values


@pytest.mark.parametrize("patch", patches.FILE_PATCHES, ids=lambda p: p.name)
def test_each_file_patch_was_written_against_the_installed_upstream_file(patch):
    import nbgrader

    upstream = patch.target(Path(sys.prefix))
    assert nbgrader.__version__ == patches.NBGRADER_VERSION
    assert hashlib.sha256(upstream.read_bytes()).hexdigest() == patch.upstream_sha256, \
        f"{upstream} changed upstream: check {patch.name} against it and update autograder/patches"
    new = patch.patched(upstream.read_text(encoding="utf-8"), **patch_values())
    assert new != upstream.read_text(encoding="utf-8") and patch.new.format(**patch_values()) in new


# ------------------------------------------------------------------------------------------------ in the process
@pytest.mark.parametrize("patch", patches.PATCHES + patches.OVERRIDES, ids=lambda p: p.name)
def test_each_patch_was_checked_against_the_installed_upstream(patch, monkeypatch):
    """The installed distribution is the version the patch names, every function it replaces has the signature it
    was written for, and a function it writes again has the upstream source it was written from."""
    monkeypatch.setenv("USER", os.environ.get("USER", "root"))       # ngshare_exchange reads it at import
    assert patches.checked(patch) == [], f"{patch.name}: check it against the installed upstream and update " \
                                         "autograder/patches (its record and its code)"


def upstream_overrides() -> set[str]:
    """``module:Class.method`` of every upstream method (``patches.UPSTREAM_PACKAGES``) that a class of the package
    overrides with a function of its own (traitlets' defaults and observers are configuration, not overrides)."""
    import importlib
    import inspect
    import pkgutil

    import autograder

    found = set()
    for info in pkgutil.walk_packages(autograder.__path__, "autograder."):
        if info.name.endswith(("__main__", "hub.jupyterhub_config")):   # run by python -m, by jupyterhub -f
            continue
        module = importlib.import_module(info.name)
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                continue
            for name, value in vars(cls).items():
                if not inspect.isfunction(getattr(value, "__func__", value)):
                    continue
                base = next((b for b in cls.__mro__[1:] if name in vars(b)), None)
                if base is not None and base.__module__.split(".")[0] in patches.UPSTREAM_PACKAGES:
                    found.add(f"{base.__module__}:{base.__qualname__}.{name}")
    return found


def test_every_upstream_method_a_subclass_overrides_is_in_the_table(monkeypatch):
    """The course's subclasses of nbgrader, nbconvert, JupyterHub and ngshare-exchange: each method they override is
    in ``patches.OVERRIDES`` (with its signature, and its source where rewritten), and the table lists no other."""
    monkeypatch.setenv("USER", os.environ.get("USER", "root"))       # ngshare_exchange reads it at import
    listed = {f for patch in patches.OVERRIDES for f in patch.functions}
    found = upstream_overrides()
    assert found - listed == set(), "override(s) of upstream code missing from autograder/patches' OVERRIDES"
    assert listed - found == set(), "OVERRIDES lists what no class of the package overrides any more"


def test_a_changed_signature_or_source_upstream_is_noticed(monkeypatch):
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default.collect import ExchangeCollect

    def get_existing_timestamp(self, dest_path, strict=False):          # an upstream with a new parameter
        return None

    def do_copy(self, src, dest, log=None):                             # same signature, another body
        return shutil.copytree(src, dest)

    monkeypatch.setattr(CourseDirectory, "get_existing_timestamp", get_existing_timestamp)
    monkeypatch.setattr(ExchangeCollect, "do_copy", do_copy)
    assert patches.checked(patches.TIMESTAMP) == ["nbgrader.coursedir:CourseDirectory.get_existing_timestamp"
                                                  "(self, dest_path, strict=False), not (self, dest_path)"]
    assert [p.split("'s source")[0] for p in patches.checked(patches.COLLECT)] == \
        ["nbgrader.exchange.default.collect:ExchangeCollect.do_copy"]


def test_every_installer_is_idempotent(monkeypatch):
    """Installed twice (course_config.py is loaded more than once in a process), each patch replaces its functions
    once: the second call leaves them as they are, and ``upstream`` finds the upstream function behind them."""
    from autograder.patches import files, formgrader, gradebook, hub

    before, wanted = {}, {}
    for patch in patches.PATCHES:
        for function in patch.functions:
            owner, name = patches.resolve(function)
            monkeypatch.setattr(owner, name, patches.upstream(owner, name))   # upstream now, put back after the test
            before[function] = patches.upstream(owner, name)
            wanted.setdefault(function, []).append(patch.name)
    monkeypatch.setattr(hub, "SERVICE_WAITS", {})
    installers = (files.harden_nbgrader, formgrader.totals_with_late_penalties, formgrader.student_numbers,
                  gradebook.head_in_process, lambda: hub.patient_service_wait_up(18999, 15),
                  hub.fix_ngshare_sqlalchemy2, lambda: hub.check_ngshare_submissions(lambda *args: None),
                  hub.own_ngshare_submissions)
    for install in installers:
        install()
    installed = {f: getattr(*patches.resolve(f)) for f in before}
    for install in installers:
        install()
    for function, original in before.items():
        owner, name = patches.resolve(function)
        assert getattr(owner, name) is installed[function], function
        assert getattr(owner, name) is not original and patches.upstream(owner, name) is original, function
        layers, current = [], getattr(owner, name)
        while getattr(current, "_course_patch", None):
            layers.append(current._course_patch)
            current = current.__wrapped__
        assert current is original and sorted(layers) == sorted(wanted[function]), f"{function}: {layers}"


def hard_linked_env(tmp_path: Path) -> Path:
    """An environment like the hub's: the patched files hard links into this .venv."""
    env = tmp_path / "env"
    for patch in patches.FILE_PATCHES:
        target = patch.target(env)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():                       # two patches may change one file
            os.link(patch.target(Path(sys.prefix)), target)
    return env


def test_a_new_gradebook_is_stamped_with_the_version_alembic_heads_names(tmp_path, monkeypatch):
    """The patched ``get_alembic_version`` gives what nbgrader's own (``alembic heads`` in a process) gives, and a
    new gradebook made in this process is stamped with it without starting any process."""
    import nbgrader.api
    from sqlalchemy import create_engine, text

    from autograder.patches.gradebook import head_in_process

    monkeypatch.setattr(nbgrader.api, "get_alembic_version", nbgrader.api.get_alembic_version)   # put back after
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    upstream = patches.upstream(nbgrader.api, "get_alembic_version")()      # nbgrader's: `alembic heads`
    head_in_process()

    def no_process(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[0] if args else kwargs}")

    monkeypatch.setattr(subprocess.Popen, "__init__", no_process)
    assert nbgrader.api.get_alembic_version() == upstream
    with nbgrader.api.Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}"):
        pass
    monkeypatch.undo()
    engine = create_engine(f"sqlite:///{tmp_path / 'gradebook.db'}")
    with engine.connect() as db:
        assert db.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [upstream]
    engine.dispose()


def test_an_nbgrader_command_makes_its_gradebook_without_alembic_on_the_path(tmp_path):
    """A real nbgrader command on the course's configuration (``course_config.py`` installs the patch) makes a new
    gradebook with no ``alembic`` to be found on $PATH (nbgrader's own code fails there: FileNotFoundError)."""
    from autograder import course

    work = course.scratch_course(tmp_path / "course", ["quiz"])
    env = {**os.environ, **course.course_env(work), "PATH": "/usr/bin:/bin", "KERAS_BACKEND": "torch"}
    assert shutil.which("alembic", path=env["PATH"]) is None
    proc = subprocess.run([str(Path(sys.executable).with_name("nbgrader")), "db", "student", "add", "2026001"],
                          cwd=work, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{work / 'gradebook.db'}") as gb:
        assert [s.id for s in gb.students] == ["2026001"]


def test_the_patches_go_into_a_copy_once_and_never_through_the_hard_link(tmp_path):
    env = hard_linked_env(tmp_path)
    before = {p.name: p.target(Path(sys.prefix)).read_bytes() for p in patches.FILE_PATCHES}
    assert apply_file_patches(env) == [p.name for p in patches.FILE_PATCHES]
    assert apply_file_patches(env) == []                                        # idempotent
    for patch in patches.FILE_PATCHES:
        source, target = patch.target(Path(sys.prefix)), patch.target(env)
        assert source.read_bytes() == before[patch.name]                                  # .venv untouched
        assert not os.path.samefile(source, target)
        assert patch.new.format(**patch_values()) in target.read_text(encoding="utf-8")
    utils_js = patches.ROUND_TO_PRECISION.target(env).read_text()
    assert f"precision = {patch_values()['decimals']};" in utils_js


def test_a_changed_upstream_file_is_refused(tmp_path):
    source = tmp_path / "upgraded"
    target = patches.ROUND_TO_PRECISION.target(source)
    target.parent.mkdir(parents=True)
    target.write_text(patches.ROUND_TO_PRECISION.target(Path(sys.prefix)).read_text() + "\n// 0.9.7\n")
    with pytest.raises(patches.UpstreamChanged, match="formgrader's score precision"):
        apply_file_patches(hard_linked_env(tmp_path), source=source)


# ------------------------------------------------------------------------------------------------ formgrader's totals
@pytest.fixture()
def late_gradebook(tmp_path, monkeypatch):
    """One assignment (one notebook, one 10-point grade cell); kim scored 10, 2.5 of them lost to lateness; lee
    scored 6, on time."""
    from nbgrader.api import Gradebook

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}")  # alembic

    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gb:
        gb.add_assignment("hw")
        gb.add_notebook("hw", "hw")
        gb.add_grade_cell("test_a", "hw", "hw", max_score=10, cell_type="code")
        for student, score, penalty in (("kim", 10.0, 2.5), ("lee", 6.0, 0.0)):
            gb.add_student(student, first_name=student, last_name="학생")
            gb.add_submission("hw", student)
            gb.find_grade("test_a", "hw", "hw", student).auto_score = score
            gb.find_submission_notebook("hw", "hw", student).late_submission_penalty = penalty
        gb.db.commit()
    return tmp_path, url


def test_formgrader_totals_are_net_of_the_late_penalty(late_gradebook, monkeypatch):
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    from autograder.patches.formgrader import totals_with_late_penalties

    root, url = late_gradebook
    # nbgrader's own methods for this test (the course's config may have patched them earlier in this process),
    # the patched ones back after it
    for function in patches.FORMGRADER_TOTALS.functions:
        owner, name = patches.resolve(function)
        monkeypatch.setattr(owner, name, patches.upstream(owner, name))
    (root / "source" / "hw").mkdir(parents=True)
    for student in ("kim", "lee"):                                  # collected and autograded, as formgrader sees it
        for folder in ("submitted", "autograded"):
            (root / folder / student / "hw").mkdir(parents=True)
            (root / folder / student / "hw" / "hw.ipynb").write_text("{}")
    api = NbGraderAPI(CourseDirectory(root=str(root), db_url=url))
    raw = {s["student"]: s["score"] for s in api.get_submissions("hw")}
    assert raw == {"kim": 10.0, "lee": 6.0}                                             # nbgrader's own: no penalty

    totals_with_late_penalties()
    totals_with_late_penalties()                                                        # once only
    assert {s["student"]: s["score"] for s in api.get_submissions("hw")} == {"kim": 7.5, "lee": 6.0}
    assert api.get_submission("hw", "kim")["score"] == 7.5
    assert api.get_submission("hw", "kim")["late_submission_penalty"] == 2.5
    assert [s["score"] for s in api.get_student_submissions("kim")] == [7.5]
    assert {s["id"]: s["score"] for s in api.get_students()} == {"kim": 7.5, "lee": 6.0}
    assert api.get_student("kim")["score"] == 7.5
    assert sorted(s["score"] for s in api.get_notebook_submissions("hw", "hw")) == [6.0, 7.5]
    assert api.get_assignment("hw")["average_score"] == pytest.approx((7.5 + 6.0) / 2)
    assert api.get_notebooks("hw")[0]["average_score"] == pytest.approx((7.5 + 6.0) / 2)


def test_formgrader_submissions_name_the_rosters_student_number(late_gradebook, monkeypatch):
    """Submissions carry their student's lms_user_id (the Students and Submissions pages show it); the two patches of
    get_submission(s), each installed twice in either order, wrap it once each and keep the totals net."""
    from nbgrader.api import Gradebook
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    from autograder.patches.formgrader import student_numbers, totals_with_late_penalties

    root, url = late_gradebook
    for function in {**patches.FORMGRADER_TOTALS.functions, **patches.STUDENT_NUMBERS.functions}:
        owner, name = patches.resolve(function)
        monkeypatch.setattr(owner, name, patches.upstream(owner, name))
    with Gradebook(url) as gb:
        gb.update_or_create_student("kim", lms_user_id="2026001")
    for student in ("kim", "lee"):
        for folder in ("submitted", "autograded"):
            (root / folder / student / "hw").mkdir(parents=True)
            (root / folder / student / "hw" / "hw.ipynb").write_text("{}")
    (root / "submitted" / "park" / "hw").mkdir(parents=True)                  # collected, not autograded yet
    (root / "submitted" / "park" / "hw" / "hw.ipynb").write_text("{}")
    api = NbGraderAPI(CourseDirectory(root=str(root), db_url=url))
    assert "lms_user_id" not in api.get_submissions("hw")[0]                            # nbgrader's own

    for install in (student_numbers, totals_with_late_penalties, student_numbers, totals_with_late_penalties):
        install()
    assert {s["student"]: s.get("lms_user_id") for s in api.get_submissions("hw")} == \
        {"kim": "2026001", "lee": None, "park": None}
    assert api.get_submission("hw", "kim")["lms_user_id"] == "2026001"
    assert {s["student"]: s["score"] for s in api.get_submissions("hw")}["kim"] == 7.5
    layers, function = [], NbGraderAPI.get_submissions
    while getattr(function, "_course_patch", None):
        layers.append(function._course_patch)
        function = function.__wrapped__
    assert sorted(layers) == sorted([patches.FORMGRADER_TOTALS.name, patches.STUDENT_NUMBERS.name]), layers


# ------------------------------------------------------------------------------------------------ Validate's summary
def executed_notebook(outcomes: dict) -> nbformat.NotebookNode:
    """Grade cells as nbgrader's validator leaves them after running: an error output where a check failed."""
    nb = nbformat.v4.new_notebook()
    for grade_id, outcome in outcomes.items():
        if outcome == "by hand":
            cell = nbformat.v4.new_markdown_cell("답")
            cell.metadata["nbgrader"] = {"grade": True, "solution": True, "grade_id": grade_id, "points": 2}
        else:
            cell = nbformat.v4.new_code_cell(f'with visible_check("{grade_id[5:]}"):\n    pass')
            cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": grade_id, "points": 2}
            if outcome != "passed":
                cell.outputs = [nbformat.v4.new_output(
                    "error", ename="CheckFailed", evalue=outcome,
                    traceback=["\x1b[0;31mCheckFailed\x1b[0m: " + outcome])]
        nb.cells.append(cell)
    return nb


def test_validate_summary_lists_each_exercise_in_korean():
    from autograder.hub import lab_validate
    from autograder.messages import ValidateText

    nb = executed_notebook({"test_softmax": "passed",
                            "test_causal_mask": "❌ causal_mask: 모양이 다릅니다. 결과 (4,), 기대 (4, 4)",
                            "test_apply_rope": "❌ apply_rope: 아직 구현하지 않았습니다 (NotImplementedError). "
                                               + "해답 셀을 완성하세요." * 40,
                            "written_1": "by hand"})
    result = {"failed": [{"source": c.source, "error": "…"} for c in nb.cells[1:3]]}
    got = lab_validate.summary(result, nb)
    assert got["title"] == ValidateText.TITLE.korean() and got["ok"] is False
    assert got["headline"] == ValidateText.COUNTS.korean(passed=1, failed=2)
    texts = [item["text"] for item in got["items"]]
    assert texts[0] == ValidateText.PASSED.korean(name="softmax")
    assert texts[1] == ValidateText.FAILED.korean(name="causal_mask", reason="모양이 다릅니다. 결과 (4,), 기대 (4, 4)")
    assert texts[2].startswith("❌ apply_rope 실패: 아직 구현하지") and len(texts[2]) < 340      # short, one line
    assert texts[3] == ValidateText.BY_HAND.korean(name="written_1")
    assert [i["ok"] for i in got["items"]] == [True, False, False, True]

    everything = lab_validate.summary({}, executed_notebook({"test_softmax": "passed"}))
    assert everything["ok"] is True and everything["headline"] == ValidateText.ALL_PASSED.korean()
    changed = lab_validate.summary({"type_changed": [{"source": "def f(): pass", "old_type": "markdown",
                                                      "new_type": "code"}]}, None)
    assert changed["ok"] is False and changed["headline"].startswith("셀의 종류")


def test_the_hub_environment_gets_the_korean_validate_without_the_autograder_package(tmp_path):
    """environment.lab_additions on an environment like the hub's: the extension module and its texts copied in,
    enabled in place of nbgrader's validate_assignment, importable without ``autograder``; the file patches."""
    import json
    import subprocess

    from autograder.hub import environment
    from autograder.hub.layout import Layout
    from autograder.messages import ValidateText

    env = hard_linked_env(tmp_path)
    (env / "etc" / "jupyter").mkdir(parents=True)
    layout = Layout(course_id="hubopspatch", env=env, state=tmp_path / "state")
    changed = environment.lab_additions(layout)
    assert f"{environment.LAB_MODULE}.py" in changed and patches.VALIDATE_DIALOG.name in changed
    assert environment.lab_additions(layout) == []                                        # idempotent
    config = json.loads((env / "etc" / "jupyter" / "jupyter_server_config.json").read_text())
    assert config["ServerApp"]["jpserver_extensions"] == {"nbgrader.server_extensions.validate_assignment": False,
                                                          "nbgrader.server_extensions.assignment_list": False,
                                                          environment.LAB_MODULE: True,
                                                          environment.ASSIGNMENTS_MODULE: True}
    site = environment._site_packages(env)
    probe = ("import sys\nsys.modules['autograder'] = None   # the hub's environment has no autograder package\n"
             f"import {environment.LAB_MODULE} as lab\nprint(lab.texts()['title'])\n"
             f"print(len(lab._jupyter_server_extension_points()))\n"
             f"import {environment.ASSIGNMENTS_MODULE} as listed\nprint(listed.course_facts()['assignments'])\n")
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "PYTHONPATH": str(site),
                                                             "USER": os.environ.get("USER", "root")},
                         cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [ValidateText.TITLE.korean(), "1", str(settings.course()["assignments"])]


# ------------------------------------------------------------------------------------------------ at start-up
IRIS = ["https://예시.kr/강의?주=3#어텐션", "http://a b", "mailto:x@y.z", "%%", "relative/경로", "urn:isbn:0451450523"]
IRI_CHECK = """
import json, sys
{first}
import jsonschema
built = "rfc3987_syntax.syntax_helpers" in sys.modules
checker = jsonschema.Draft7Validator.FORMAT_CHECKER
verdicts = [[checker.conforms(v, f) for f in ("iri", "iri-reference")] for v in json.loads(sys.argv[1])]
print(json.dumps({{"built_at_import": built, "verdicts": verdicts}}))
"""


def iri_verdicts(first: str = "") -> dict:
    import json
    import subprocess

    out = subprocess.run([sys.executable, "-c", IRI_CHECK.format(first=first), json.dumps(IRIS)],
                         capture_output=True, text=True, cwd="/")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_an_interpreter_of_the_venv_builds_no_iri_grammar_and_checks_iris_as_before():
    """In a new interpreter of .venv (the .pth of scripts/setup.sh), importing jsonschema builds no RFC 3987 grammar;
    its IRI format checks then give what they give with the real module imported first."""
    lazy = iri_verdicts()
    eager = iri_verdicts('sys.modules.pop("rfc3987_syntax", None)\nimport rfc3987_syntax')
    assert lazy["built_at_import"] is False, "rfc3987_syntax's grammar was built when jsonschema was imported"
    assert eager["built_at_import"] is True
    assert lazy["verdicts"] == eager["verdicts"]
    assert {v for pair in lazy["verdicts"] for v in pair} == {True, False}   # the checks ran: some IRIs are not


def test_the_startup_stand_in_was_checked_against_the_installed_upstream():
    """rfc3987-syntax is the version and ``is_valid_syntax`` the signature the stand-in was written for, and
    jsonschema imports that one name from it (the stand-in has it without importing the real module)."""
    import jsonschema._format

    assert patches.checked(patches.STARTUP) == []
    source = Path(jsonschema._format.__file__).read_text(encoding="utf-8")
    imports = [line.strip() for line in source.splitlines() if "import" in line and "rfc3987_syntax" in line]
    assert imports == ["from rfc3987_syntax import is_valid_syntax as _rfc3987_is_valid_syntax"], imports


def test_the_startup_files_are_current_in_the_venv_and_go_into_the_hubs_environment(tmp_path):
    """scripts/setup.sh installed this checkout's startup module (its stamp covers the file); the hub's environment
    gets both files at every hub start (``lab_additions``), and a new interpreter there has the stand-in."""
    import subprocess
    import sysconfig

    from autograder.hub import environment
    from autograder.hub.layout import Layout
    from autograder.patches import startup

    venv_site = Path(sysconfig.get_paths()["purelib"])
    assert (venv_site / f"{startup.INSTALLED_AS}.py").read_text() == Path(startup.__file__).read_text()
    assert (venv_site / f"{startup.INSTALLED_AS}.pth").read_text() == startup.PTH
    env = hard_linked_env(tmp_path)
    (env / "etc" / "jupyter").mkdir(parents=True)
    changed = environment.lab_additions(Layout(course_id="hubopsstart", env=env, state=tmp_path / "state"))
    assert {f"{startup.INSTALLED_AS}.py", f"{startup.INSTALLED_AS}.pth"} <= set(changed)
    site = environment._site_packages(env)
    probe = (f"import site, sys\nsys.path.append({str(venv_site)!r})   # rfc3987_syntax (not linked into this env)\n"
             f"site.addsitedir({str(site)!r})\n"
             "print(type(sys.modules.get('rfc3987_syntax')).__name__)")
    out = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, cwd="/")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "_StandIn"


def test_validate_names_the_error_of_the_cell_that_failed_first():
    """A solution cell with an IndentationError leaves its function undefined: Validate says so, with the cell and
    the line, not "NameError: name 'softmax' is not defined" of the check below; a check that fails on its own
    keeps its own message."""
    from autograder.hub import lab_validate
    from autograder.messages import ValidateText

    def code(source, grade_id=None, error=None, grade=False):
        cell = nbformat.v4.new_code_cell(source)
        if grade_id:
            cell.metadata["nbgrader"] = {"grade": grade, "solution": not grade, "grade_id": grade_id, "points": 2}
        if error:
            ename, evalue, traceback = error
            cell.outputs = [nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=traceback)]
        return cell

    indentation = ("IndentationError", "unexpected indent",
                   ["\x1b[0;36m  Cell \x1b[0;32mIn[2], line 4\x1b[0;36m\n\x1b[0;31m    return e\x1b[0m\n"
                    "\x1b[0m    ^\x1b[0m\n\x1b[0;31mIndentationError\x1b[0m\x1b[0;31m:\x1b[0m unexpected indent\n"])
    undefined = ("NameError", "name 'softmax' is not defined",
                 ["\x1b[0;31mNameError\x1b[0m: name 'softmax' is not defined"])
    nb = nbformat.v4.new_notebook(cells=[
        code("import numpy as np"),
        code("def softmax(x):\n    e = np.exp(x)\n    return e\n        return e", "solution_softmax", indentation),
        code('with visible_check("softmax"):\n    softmax(1)', "test_softmax", undefined, grade=True),
        code("def causal_mask(t):\n    return np.ones(t)", "solution_causal_mask"),
        code('with visible_check("causal_mask"):\n    pass', "test_causal_mask", grade=True,
             error=("CheckFailed", "❌ causal_mask: 모양이 다릅니다", ["CheckFailed: ❌ causal_mask: 모양이 다릅니다"]),
             ),
        code("def uses(x):\n    return softmax(x)", "solution_uses"),
        code('with visible_check("uses"):\n    uses(1)', "test_uses", undefined, grade=True),
    ])
    got = lab_validate.summary({}, nb)
    texts = [item["text"] for item in got["items"]]
    solution = ValidateText.SOLUTION_CELL.korean(name="softmax", number=2)
    indent = ValidateText.SYNTAX_UNEXPECTED_INDENT.korean(ename="IndentationError")
    assert texts[0] == ValidateText.FAILED_EARLIER.korean(
        name="softmax", where=solution + ValidateText.AT_LINE.korean(line=4), reason=indent), texts
    assert texts[1] == ValidateText.FAILED.korean(name="causal_mask", reason="모양이 다릅니다")
    # its own cells ran: it failed only because softmax's cell did
    assert texts[2] == ValidateText.FAILED_BECAUSE.korean(name="uses", where=solution, missing="softmax")
    assert got["first"].startswith(ValidateText.FIRST_ERROR.korean(error=f"{solution} 4번째 줄: {indent}")), got
