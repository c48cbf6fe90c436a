"""benchmarks/suite_time.py: the suite's seconds per group, file and test from JUnit XML, one run or two compared."""
from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import ROOT

RUN = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.hub.live.test_hub_course" name="test_a" time="40.0"/>
<testcase classname="tests.hub.test_hub_layout" name="test_b" time="2.0"/>
<testcase classname="tests.browser.test_browser_student" name="test_c" time="30.5"/>
<testcase classname="tests.sandbox.live.test_attacks" name="test_d[x]" time="20.0"/>
<testcase classname="tests.graders.test_kv_cache_graders" name="test_e" time="9.0"/>
<testcase classname="tests.test_nbgrader" name="test_f" time="{f}"/>
</testsuite></testsuites>"""


@pytest.fixture(scope="module")
def suite_time():
    spec = importlib.util.spec_from_file_location("suite_time", ROOT / "benchmarks" / "suite_time.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_groups_are_the_schedulers_and_the_folders(suite_time, tmp_path):
    run = tmp_path / "run.xml"
    run.write_text(RUN.format(f="65.5"))
    tests = suite_time.read(run)
    assert suite_time.totals(tests, 1) == {"hub": 42.0, "browser": 30.5, "sandbox/live": 20.0, "graders": 9.0,
                                           "tests/": 65.5}
    assert tests["tests/sandbox/live/test_attacks.py::test_d[x]"] == ("tests/sandbox/live/test_attacks.py",
                                                                      "sandbox/live", 20.0)


def test_two_runs_side_by_side_with_the_difference(suite_time, tmp_path, capsys):
    before, after = tmp_path / "before.xml", tmp_path / "after.xml"
    before.write_text(RUN.format(f="65.5"))
    after.write_text(RUN.format(f="17.4"))
    assert suite_time.main([str(before), str(after), "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert f"{before}: 6 tests, 167 s summed" in out and f"{after}: 6 tests, 119 s summed" in out
    assert "   65.5     17.4    -48.1  tests/" in out                      # the group
    assert "   65.5     17.4    -48.1  tests/test_nbgrader.py::test_f" in out
    files = out.split("costliest files")[1].split("costliest tests")[0]
    assert files.count("tests/") == 3                                      # --top


def test_a_missing_file_is_named(suite_time, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        suite_time.main([str(tmp_path / "nope.xml")])
    assert exit_.value.code == 2 and "no such file" in capsys.readouterr().err
