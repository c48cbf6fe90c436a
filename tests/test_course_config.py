"""The course's settings are read once, typed and checked (``autograder.settings.load()``).

Every section of ``course_config.py``'s ``COURSE`` is a record of ``autograder.settings`` whose fields are exactly
its keys: a key that nothing reads (a typo) or a missing key, in any section or a section's section, is a
``ConfigError`` that names the key, the section and the file. The rest of the package reads the typed record, never
``COURSE`` itself: a default written where a setting is read (``.get("cpu_weight", 100)``) would let a mistyped key
pass unnoticed.
"""
from __future__ import annotations

import ast
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import settings

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "autograder"
LOADER = PACKAGE / "settings.py"


def raw_reads(path: Path) -> list[str]:
    """Where ``path`` reads ``COURSE`` itself: a call of ``course()`` (``settings.course()`` or a name imported
    from it), ``settings.course`` handed on, or a subscript of ``COURSE``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Name) and node.func.id == "course")
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "course")):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Attribute) and node.attr == "course" and ast.unparse(node.value) == "settings":
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "COURSE":
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and node.module == "autograder.settings" \
                and any(a.name in ("course", "COURSE") for a in node.names):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return sorted(set(found))


def test_only_the_loader_reads_course_config():
    reads = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if path != LOADER and (found := raw_reads(path)):
            reads[name] = found
    assert not reads, f"COURSE read outside autograder/settings.py (read settings.load()'s records): {reads}"


def test_the_check_sees_a_raw_read(tmp_path):
    """The walk above finds each form of a raw read."""
    module = tmp_path / "m.py"
    module.write_text("from autograder import settings\nfrom autograder.settings import course\n"
                      "a = settings.course()['hub'].get('cpu_weight', 100)\nb = course()\nc = COURSE['x']\n"
                      "d = dict(default=settings.course)\ne = settings.load().hub.cpu_weight\n")
    assert [line.split(":")[0] for line in raw_reads(module)] == ["line 2", "line 3", "line 3", "line 4", "line 5",
                                                                  "line 6"]


def sections(values: dict, where: str = "COURSE") -> list[tuple[str, tuple[str, ...], dict]]:
    """(the section's name in messages, its keys' path from COURSE, its dict) of COURSE and every section in it."""
    found = [(where, (), values)]
    for key, value in values.items():
        if isinstance(value, dict):
            found += [(w, (key, *p), d) for w, p, d in sections(value, f"{where}[{key!r}]")]
    return found


SECTIONS = sections(runpy.run_path(str(ROOT / "course_config.py"))["COURSE"])


def test_every_section_is_checked():
    """Each section of course_config.py is a record (due_dates: one per assignment), nested ones too."""
    assert {w for w, _, _ in SECTIONS} >= {"COURSE", "COURSE['exchange']", "COURSE['exchange']['door']",
                                           "COURSE['due_dates']", "COURSE['late_penalty']", "COURSE['timeouts']",
                                           "COURSE['hub']", "COURSE['sandbox']", "COURSE['similarity']"}
    course = settings.load()
    assert course.hub.cpu_weight == settings.course()["hub"]["cpu_weight"]
    assert course.exchange.door.memory_mb == settings.course()["exchange"]["door"]["memory_mb"]


def broken(tmp_path: Path, keys: tuple[str, ...], change: str) -> Path:
    """A copy of course_config.py with one more line at the end of COURSE's reading, ``change`` of the section at
    ``keys``."""
    section = "COURSE" + "".join(f"[{k!r}]" for k in keys)
    config = tmp_path / "course_config.py"
    text = (ROOT / "course_config.py").read_text(encoding="utf-8")
    marker = "\n# nbgrader's own settings"
    assert marker in text
    config.write_text(text.replace(marker, f"\n_section = {section}\n{change}\n{marker}", 1), encoding="utf-8")
    return config


@pytest.mark.parametrize("where, keys, values", SECTIONS, ids=[w for w, _, _ in SECTIONS])
def test_a_misspelled_key_is_an_error_that_names_it(tmp_path, where, keys, values):
    """In each section, each key misspelled in turn (its value kept): a ConfigError naming the misspelled key,
    the section and the file; and each key left out: one naming the missing key."""
    for key in values:
        typo = key[:-1] + key[-1] * 2
        config = broken(tmp_path, keys, f"_section[{typo!r}] = _section.pop({key!r})")
        with pytest.raises(settings.ConfigError) as caught:
            settings.Course.load(config)
        message = str(caught.value)
        assert str(config) in message and f"{where} " in message and repr(typo) in message, (key, message)
        config = broken(tmp_path, keys, f"del _section[{key!r}]")
        with pytest.raises(settings.ConfigError) as caught:
            settings.Course.load(config)
        message = str(caught.value)
        assert str(config) in message and repr(key) in message and "lacks" in message, (key, message)


def test_course_config_names_the_file_load_reads(tmp_path):
    """``$COURSE_CONFIG`` is what ``load()`` reads (a fresh process: it is read once per process)."""
    config = broken(tmp_path, ("hub",), "_section['cpu_weigth'] = _section.pop('cpu_weight')")
    code = "from autograder import settings\nsettings.load()"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "COURSE_CONFIG": str(config)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "ConfigError" in proc.stderr, proc.stderr[-2000:]
    assert f"{config}: COURSE['hub'] sets 'cpu_weigth', which nothing reads" in proc.stderr, proc.stderr[-2000:]
    assert "lacks 'cpu_weight'" in proc.stderr
