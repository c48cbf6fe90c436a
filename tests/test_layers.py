"""The package's layers (issue 24): no import circle, and no module imports one above it.

From the bottom: the configuration, the catalogue and a submission's text made inert; the submission (files and
notebooks); the sandbox; the graders; one grading (``grade.py``, ``report.py``); the gradebook (nbgrader's
preprocessors, the class run); the patches of nbgrader and JupyterHub (one of them adds to formgrader what the
gradebook computes); the feedback, the hub, the demo; the CLI. Every import counts, a function's own too (a lazy
import is still an arrow).
"""
from __future__ import annotations

import ast
from pathlib import Path

import autograder

PACKAGE = Path(autograder.__file__).parent
LAYERS = {   # module or package -> its layer (a module takes the layer of its longest listed prefix)
    "autograder.settings": 0, "autograder.messages": 0, "autograder.course": 0, "autograder.scores": 0,
    "autograder.inert": 0,   # a submission's text made inert for consoles, XML and JSON
    "autograder.outputs": 0, "autograder.names": 0,   # files replaced whole; names checked against those that exist
    "autograder.submission": 1,
    "autograder.sandbox": 2,
    "autograder.graders": 3,
    "autograder.grade": 4, "autograder.report": 4,
    "autograder.gradebook": 5,
    "autograder.patches": 6,
    "autograder.feedback": 7, "autograder.hub": 7, "autograder.lti": 7,
    "autograder.demo": 8, "autograder.k8s": 8, "autograder.ci": 8,
    "autograder.cli": 9, "autograder.__main__": 9,
}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


MODULES = modules()


def owner(name: str) -> str:
    """The module of the package that ``name`` (a module, or a name imported from one) is in."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports(name: str) -> set[str]:
    """The package's modules that module ``name`` imports anywhere in its file (the package itself left out)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        found |= {owner(t) for t in targets if t.startswith("autograder")}
    # a module may import its own package (its __init__); a package's __init__ its own modules
    return {t for t in found if t != name and t != "autograder" and not name.startswith(t + ".")}


def layer(name: str) -> int:
    prefixes = [p for p in LAYERS if name == p or name.startswith(p + ".")]
    assert prefixes, f"{name} has no layer: add it to tests/test_layers.py's LAYERS"
    return LAYERS[max(prefixes, key=len)]


def test_every_module_has_a_layer():
    for name in MODULES:
        if name != "autograder":
            layer(name)


def test_every_layer_names_a_module_or_package():
    stale = [name for name in LAYERS if name not in MODULES]
    assert not stale, f"LAYERS lists what the package does not have: {stale}"


def test_nothing_imports_a_module_above_it():
    upward = sorted(f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)})"
                    for m in MODULES if m != "autograder" for t in imports(m) if layer(t) > layer(m))
    assert not upward, "\n".join(upward)


def test_no_import_circle():
    graph = {m: imports(m) for m in MODULES if m != "autograder"}
    seen: dict[str, int] = {}   # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        seen[name] = 1
        for target in sorted(graph.get(name, ())):
            if name.startswith(target + ".") or target.startswith(name + "."):
                continue   # a package and its own modules
            assert seen.get(target) != 1, "import circle: " + " -> ".join(path[path.index(target):] + [target])
            if target not in seen:
                visit(target, path + [target])
        seen[name] = 2

    for name in graph:
        if name not in seen:
            visit(name, [name])


# ------------------------------------------------------------------------------- names private to another module
# A name with a leading underscore is its module's own: another module of the package that imports it
# (``from autograder.x import _name``) or reaches it (``x._name``, ``x`` bound to a module of the package by an import)
# depends on what its owner may change at will. What modules share is public, or lives in the module that owns it.
# Dunders (``__file__``) are public. Only the package's own modules are checked: the patches reach into nbgrader's and
# JupyterHub's privates on purpose, each behind its version check (``autograder/patches``).
PRIVATE_ALLOWED: dict[str, str] = {}   # "importing module -> owner._name" -> why it may (none today)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _absolute(name: str, node: ast.ImportFrom) -> str:
    """The absolute module of a ``from ... import`` in module ``name``."""
    if not node.level:
        return node.module or ""
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    parts = package.split(".")
    return ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))


def private_uses(name: str, tree: ast.AST | None = None) -> list[str]:
    """Where module ``name`` uses a name private to another module of the package (``from X import _y``, ``X._y``
    with ``X`` a module of the package bound by an import anywhere in the file), as ``"line: name -> X._y"``."""
    tree = tree or ast.parse(MODULES[name].read_text(encoding="utf-8"))
    found, bound = [], {"autograder": "autograder"}   # bound: local name -> the package's module it names
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES and alias.asname:
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(name, node)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in MODULES:
                    bound[alias.asname or alias.name] = target
                if base.startswith("autograder") and _private(alias.name) and owner(target) != name:
                    found.append((node.lineno, f"{base}.{alias.name}"))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        dotted, value = [], node.value
        while isinstance(value, ast.Attribute):
            dotted.insert(0, value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in bound:
            module = ".".join([bound[value.id], *dotted])
            if module in MODULES and module != name:
                found.append((node.lineno, f"{module}.{node.attr}"))
    return [f"{line}: {name} -> {what}" for line, what in sorted(found) if f"{name} -> {what}" not in PRIVATE_ALLOWED]


def test_no_module_uses_another_modules_private_names():
    found = [use for name in sorted(MODULES) for use in private_uses(name)]
    assert not found, "names private to another module of the package:\n" + "\n".join(found)


def test_the_private_name_check_finds_both_forms():
    """Planted in a module of the package: an import of another module's private name, and a use of one through
    that module; a module's own private names and another module's public ones are not reported."""
    planted = ast.parse("from autograder.gradebook.staging import _hidden, stage\n"
                        "from autograder.sandbox import lanes\n"
                        "import autograder.sandbox.policy as policy\n"
                        "lanes._secret(), lanes.Lane, policy._limit, autograder.sandbox.lanes._other\n"
                        "from autograder.cli import _own\n")
    assert private_uses("autograder.cli", planted) == [
        "1: autograder.cli -> autograder.gradebook.staging._hidden",
        "4: autograder.cli -> autograder.sandbox.lanes._other", "4: autograder.cli -> autograder.sandbox.lanes._secret",
        "4: autograder.cli -> autograder.sandbox.policy._limit"]
