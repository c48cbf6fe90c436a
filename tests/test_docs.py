"""The documentation: the Sphinx site builds with warnings as errors, without importing keras or torch; its reference
pages carry every command, option and setting of the code; the README stays a short front page whose commands are
true."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from autograder import settings
from autograder.cli import build_parser

BUILD = """
import sys
from sphinx.cmd.build import main
code = main(["-W", "--keep-going", "-q", "-b", "html", sys.argv[1], sys.argv[2]])
heavy = sorted(m for m in ("keras", "torch", "nbgrader", "tensorflow") if m in sys.modules)
print("imported:", ",".join(heavy))
sys.exit(code)
"""


@pytest.fixture(scope="module")
def site(root, tmp_path_factory):
    out = tmp_path_factory.mktemp("docs")
    proc = subprocess.run([sys.executable, "-c", BUILD, str(root / "docs"), str(out)], cwd=root,
                          capture_output=True, text=True, timeout=300)
    return proc, out


def page(site, name: str) -> str:
    return (site[1] / f"{name}.html").read_text(encoding="utf-8")


def test_the_site_builds_with_warnings_as_errors_and_without_keras(site):
    proc, _ = site
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert "imported: \n" in proc.stdout, proc.stdout[-500:]   # the build imports nothing of the graders' stack


@pytest.mark.parametrize("folder", ["instructors", "security", "admin", "authors", "design", "reference"])
def test_each_folder_is_picked_up_by_a_glob(root, site, folder):
    """Pages added to these folders later appear in the site without editing the index."""
    index = (root / "docs" / "index.md").read_text(encoding="utf-8")
    assert f"\n{folder}/*\n" in index and ":glob:" in index
    for path in (root / "docs" / folder).glob("*.md"):
        assert f'href="{folder}/{path.stem}.html"' in page(site, "index"), path


def _subcommands(parser):
    import argparse

    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_the_cli_reference_has_every_command_and_option(site):
    html = page(site, "reference/cli")
    for name, sub in _subcommands(build_parser()).items():
        assert f"python -m autograder {name}" in html, name
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert option in html, (name, option)
            if action.help and not action.option_strings:
                assert action.help.split("(")[0].strip().replace("'", "&#39;") in html, (name, action.dest)


def test_the_settings_reference_has_every_key_and_its_help(site):
    html = page(site, "reference/course-config")
    for key, value in settings.course().items():
        assert f'<span class="pre">{key}</span>' in html, key
        for inner in value if isinstance(value, dict) else ():
            assert f'<span class="pre">{inner}</span>' in html, (key, inner)
    assert "Read by <code" in html and "autograder.settings.Timeouts" in html
    assert "Percent of the score deducted per started day late." in html   # a trait's own help (late_penalty)
    assert "one code cell of the notebook" in html                          # a record field's comment (timeouts)
    assert "source/&lt;name&gt;/&lt;name&gt;.ipynb" in html                # comments shown as written, not as HTML


def test_a_key_without_help_fails_the_build(root, tmp_path):
    """The generator warns (an error under -W) about a setting that says nothing about itself."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("autograder_docs", root / "docs" / "_ext" / "autograder_docs.py")
    autograder_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(autograder_docs)
    config = tmp_path / "course_config.py"
    config.write_text('COURSE = {\n    "course_id": "x",  # the course\n    "silent": 1,\n}\n', encoding="utf-8")
    _, silent = autograder_docs.course_config_reference(config)
    assert silent == []                                # shares the comment of the key before it
    config.write_text('COURSE = {\n    "silent": 1,\n}\n', encoding="utf-8")
    _, silent = autograder_docs.course_config_reference(config)
    assert silent == ["silent"]


# ------------------------------------------------------------------------------------------------ the README
def readme(root) -> str:
    return (root / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_a_short_front_page(root):
    text = readme(root)
    assert len(text.splitlines()) <= 150
    assert not re.search(r"\bissue \d+|#\d{2,}\b", text, re.I), "history belongs in the commit log"
    for heading in ("## Who it is for", "## The two commands", "## Where to go next"):
        assert heading in text


def test_the_readme_commands_are_true(root):
    """The two commands as written, the fast lane's markers, and every page the README points to exist."""
    text = readme(root)
    assert "bash scripts/demo.sh " in text and "bash scripts/test.sh " in text
    assert (root / "scripts" / "demo.sh").is_file() and (root / "scripts" / "test.sh").is_file()
    assert '"$@"' in (root / "scripts" / "test.sh").read_text(encoding="utf-8")     # arguments go on to pytest
    lane = re.search(r'bash scripts/test\.sh -m "([^"]+)"', text).group(1)
    declared = "".join(p.read_text(encoding="utf-8") for p in [root / "pyproject.toml",
                                                                *(root / "tests").rglob("conftest.py")])
    for marker in re.findall(r"not (\w+)", lane):
        assert re.search(rf'"{marker}:', declared), marker
    for path in re.findall(r"`(docs/[\w/.-]+\.md)`", text):
        assert (root / path).is_file(), path
    commands = _subcommands(build_parser())
    for name in re.findall(r"python -m autograder (\w+)", text):
        assert name in commands, name


def test_the_students_page_follows_the_glossary(root):
    """Student-facing Korean, like the notebooks' (tests/test_korean_style.py)."""
    from tests.test_korean_style import broken_emphasis, violations

    text = (root / "docs" / "students.md").read_text(encoding="utf-8")
    assert violations(text) == [] and broken_emphasis(text) == []
