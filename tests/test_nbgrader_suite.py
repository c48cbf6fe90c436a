"""nbgrader's own tests of the commands the course patches (collect, autograde, generate_feedback, release_feedback,
fetch_feedback, submit), run with the course's patches installed (``tests/nbgrader_suite/patched_nbgrader.py``, a
pytest plugin): everything passes that passes with stock nbgrader, except the three feedback tests that expect a
submission's other files in ``feedback/``, which the course leaves out on purpose (expected failures, strict). A test
whose kernel died because another process took its TCP port first runs once more (the plugin says which).

nbgrader's suite ships in its wheel (``nbgrader/tests``). It runs in a scratch folder (the repository's
``nbgrader_config.py`` would load the course's configuration into nbgrader's tests); about 3 minutes alone on this
2-core machine (181 s measured: 88 passed, 3 expected failures, 2 skipped; 308 s before its gradebooks were stamped
without an ``alembic`` process, ``autograder/patches/gradebook.py``), started in the background when the session is
collected (``tests/helpers/nbgrader_suite_run.py``). It runs when the patches, the files they import, its runner or
the installed packages changed since it last passed (the stamp ``tests/nbgrader_suite/passed.json``, which a
passing run writes); otherwise the stamp's result is checked as a run's would be. ``AUTOGRADER_NBGRADER_SUITE=always``
runs it regardless."""
from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

from tests.helpers import nbgrader_suite_run
import pytest


@pytest.mark.slow
def test_nbgraders_own_tests_pass_with_the_course_patches():
    from tests.nbgrader_suite.patched_nbgrader import EXPECTED_FAILURES

    if not nbgrader_suite_run.needed():
        stamp = nbgrader_suite_run.read_stamp()
        print(f"\n[nbgrader suite] not run again: it passed on {stamp['passed_on']} ({stamp['seconds']} s) with "
              f"these very files ({len(stamp['files'])}, tests/nbgrader_suite/passed.json), nbgrader "
              f"{stamp['nbgrader']}, Python {stamp['python']} and installed packages "
              f"(AUTOGRADER_NBGRADER_SUITE=always runs it)")
        check(stamp["outcome"], EXPECTED_FAILURES)
        return
    nbgrader_suite_run.start_in_background()   # already running since the session collected this test
    folder, returncode, seconds = nbgrader_suite_run.wait(timeout=1800)
    print(f"\n[nbgrader suite] ended {seconds:.0f} s after it started")
    stdout, stderr = ((folder / name).read_text(errors="replace") for name in ("stdout.txt", "stderr.txt"))
    report = folder / "report.xml"
    assert report.exists(), f"{stdout[-4000:]}\n{stderr[-2000:]}"
    cases = ET.parse(report).getroot().iter("testcase")
    outcome = {}
    for case in cases:
        kind = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        if kind == "skipped" and "xfail" in (case.find("skipped").get("type") or ""):
            kind = "xfailed"
        cls = case.get("classname").rpartition(".")[2]   # its module is not in the report (--pyargs): the classes'
        outcome[f"{cls}::{case.get('name')}"] = kind          # names are unique among these modules
    counts = {kind: sum(1 for k in outcome.values() if k == kind) for kind in ("passed", "xfailed", "skipped",
                                                                               "failure", "error")}
    print(f"\n[nbgrader suite] {counts}")
    for line in stdout.splitlines():      # a kernel's port taken by another process first (patched_nbgrader.py)
        if line.startswith("run again after"):
            print(f"[nbgrader suite] {line}")
    failed = sorted(name for name, kind in outcome.items() if kind in ("failure", "error"))
    assert not failed and returncode == 0, f"{failed}\n{stdout[-4000:]}\n{stderr[-2000:]}"
    check(outcome, EXPECTED_FAILURES)
    stamp = nbgrader_suite_run.write_stamp(folder, outcome, seconds)
    print(f"[nbgrader suite] passed: tests/nbgrader_suite/passed.json written ({len(stamp['files'])} files)")
    shutil.rmtree(folder, ignore_errors=True)


def check(outcome: dict[str, str], expected_failures) -> None:
    """A run's outcome (``Class::test`` -> passed, xfailed, skipped, failure, error): nothing failed, the expected
    failures and only they failed, and as many passed and were skipped as with nbgrader 0.9.6."""
    counts = {kind: sum(1 for k in outcome.values() if k == kind) for kind in ("passed", "xfailed", "skipped",
                                                                               "failure", "error")}
    assert not [name for name, kind in outcome.items() if kind in ("failure", "error")], counts
    assert sorted(name for name, kind in outcome.items() if kind == "xfailed") == sorted(
        name.split("::", 1)[1] for name in expected_failures)
    assert (counts["passed"], counts["skipped"]) == (88, 2), counts      # nbgrader 0.9.6 (autograder/patches)


def test_the_stamp_holds_only_for_the_files_and_packages_it_was_written_for(tmp_path, monkeypatch):
    """``needed``: no stamp, a changed file of the stamp, a file that is gone or another set of installed packages
    runs the suite again; the stamp's own files and packages do not, nor a folder of other packages on this process's
    sys.path (a clean-clone CI ran the suite again after nbgrader's apps had put setuptools' vendored packages there);
    ``AUTOGRADER_NBGRADER_SUITE=always`` always does. (Files of a scratch root, not the repository's.)"""
    import importlib.metadata

    root = tmp_path / "repo"
    for name in ("a.py", *nbgrader_suite_run.ALWAYS):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n")
    monkeypatch.setattr(nbgrader_suite_run, "ROOT", root)
    monkeypatch.setattr(nbgrader_suite_run, "STAMP", tmp_path / "passed.json")
    monkeypatch.delenv(nbgrader_suite_run.FORCE_ENV, raising=False)
    assert nbgrader_suite_run.needed()                                           # no stamp yet
    run = tmp_path / "run"
    run.mkdir()
    (run / "ran.json").write_text('{"files": ["a.py"]}')
    stamp = nbgrader_suite_run.write_stamp(run, {"C::t": "passed"}, 12.0)
    assert "a.py" in stamp["files"] and set(nbgrader_suite_run.ALWAYS) <= set(stamp["files"])
    assert not nbgrader_suite_run.needed()                                       # nothing changed
    monkeypatch.setenv(nbgrader_suite_run.FORCE_ENV, "always")
    assert nbgrader_suite_run.needed()
    monkeypatch.delenv(nbgrader_suite_run.FORCE_ENV)
    (root / "a.py").write_text("# a.py, changed\n")
    assert nbgrader_suite_run.needed()                                           # a file the suite loaded
    (root / "a.py").write_text("# a.py\n")
    assert not nbgrader_suite_run.needed()
    (root / nbgrader_suite_run.ALWAYS[0]).unlink()
    assert nbgrader_suite_run.needed()                                           # the runner itself, gone
    (root / nbgrader_suite_run.ALWAYS[0]).write_text(f"# {nbgrader_suite_run.ALWAYS[0]}\n")
    assert not nbgrader_suite_run.needed()
    vendored = tmp_path / "vendored"                    # as importing nbgrader's apps puts setuptools' vendored
    (vendored / "packaging-26.3.dist-info").mkdir(parents=True)                 # packages on sys.path
    (vendored / "packaging-26.3.dist-info" / "METADATA").write_text("Name: packaging\nVersion: 26.3\n")
    monkeypatch.syspath_prepend(str(vendored))
    assert not nbgrader_suite_run.needed()                                       # the environment's packages only
    real = importlib.metadata.distributions
    monkeypatch.setattr(importlib.metadata, "distributions",
                        lambda **kw: [d for d in real(**kw) if (d.metadata["Name"] or "").lower() != "nbgrader"])
    assert nbgrader_suite_run.needed()                                           # another set of packages
