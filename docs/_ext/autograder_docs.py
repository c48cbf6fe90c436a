"""Reference pages generated from the code at build time, so that they cannot drift from it.

A page that holds the line ``% generated: cli`` gets, in its place, the reference of ``python -m autograder``: every
command, argument and option from the argparse parser of ``autograder/cli.py`` (``build_parser``), with their help.
A page with ``% generated: course-config`` gets every setting of ``course_config.py``'s ``COURSE``: each key, its
value, the comment written above or beside it there, and, for a section (a record of ``autograder.settings``: a
field of its ``Course``), the record that reads it and the help of each of its fields.

Both are Markdown put into the page's source before MyST parses it (Sphinx's ``source-read`` event), so their
headings are the page's own. ``course_config.py`` and the records are read as source (``ast``, ``tokenize``), never
run or imported: the build imports nothing of keras, torch or nbgrader. A key of ``COURSE`` with no comment anywhere
is a warning (an error under ``sphinx-build -W``): every setting says what it does.
"""
from __future__ import annotations

import argparse
import ast
import io
import re
import tokenize
from pathlib import Path

from sphinx.util import logging

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^% generated: (\S+)[ \t]*$", re.M)
logger = logging.getLogger(__name__)


CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def _markdown(text: str) -> str:
    """A comment or docstring as Markdown text: its code spans kept, ``<name>``, ``*`` and ``[...]`` elsewhere shown
    as written (not read as HTML, emphasis or links)."""
    out, last = [], 0
    for match in CODE_SPAN.finditer(text):
        out += [re.sub(r"([<>*\[\]])", r"\\\1", text[last:match.start()]), match.group(0)]
        last = match.end()
    return "".join(out + [re.sub(r"([<>*\[\]])", r"\\\1", text[last:])])


# ----------------------------------------------------------------------------------------------- the CLI
def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, help, parser) of each subcommand, in the parser's order."""
    for action in parser._actions:   # argparse keeps its subcommands there; it has no public accessor
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def _argument(action: argparse.Action) -> str:
    if action.option_strings:
        name = ", ".join(action.option_strings)
        if action.nargs != 0:
            name += f" {action.metavar or action.dest.upper()}"
    else:
        name = action.metavar or action.dest
    text = (action.help or "").replace("%(default)s", str(action.default)).replace("%%", "%")
    return f"`{name}`\n: {_markdown(text) or '(no help)'}\n"


def cli_reference() -> str:
    from autograder.cli import build_parser

    parser = build_parser()
    out = [f"Usage: `{parser.prog} COMMAND ...` ({parser.description.rstrip('.')}).", ""]
    for name, help_text, sub in _subcommands(parser):
        out += _command(f"{parser.prog} {name}", help_text, sub, "##")
    return "\n".join(out)


def _command(prog: str, help_text: str, sub: argparse.ArgumentParser, heading: str) -> list[str]:
    """A command's section: its help, usage and arguments, then its own subcommands' (``lti key``, ...) below it."""
    sub.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100)
    out = [f"{heading} `{prog}`", "", _markdown(help_text[:1].upper() + help_text[1:]) + ".", "", "```text",
           sub.format_usage().strip(), "```", ""]
    for action in sub._actions:
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            out.append(_argument(action))
    for name, inner_help, inner in _subcommands(sub):
        out += _command(f"{prog} {name}", inner_help, inner, heading + "#")
    return out


# ----------------------------------------------------------------------------------------------- course_config.py
def _comments(source: str) -> dict[int, str]:
    """Line number -> the text of the comment on that line."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string.lstrip("#").strip()
    return found


def _help(node: ast.AST, key: ast.AST, lines: list[str], comments: dict[int, str], taken: set[int]) -> str:
    """The comment block right above ``key`` (lines that are only a comment) and the comments beside its value (a
    section's: beside its key only; its keys have their own)."""
    above, line = [], key.lineno - 1
    while line in comments and lines[line - 1].lstrip().startswith("#") and line not in taken:
        above.insert(0, comments[line])
        taken.add(line)
        line -= 1
    last = key.lineno if isinstance(node, ast.Dict) else node.end_lineno
    beside = [comments[n] for n in range(key.lineno, last + 1)
              if n in comments and not lines[n - 1].lstrip().startswith("#") and n not in taken]
    taken.update(range(key.lineno, last + 1))
    return _markdown(" ".join(above + beside).strip())


def _value(node: ast.AST, source: str) -> str:
    """A setting's value as written; ``os.environ.get("X", default)`` as the default and its variable."""
    if (isinstance(node, ast.Call) and ast.unparse(node.func) == "os.environ.get" and len(node.args) == 2
            and isinstance(node.args[0], ast.Constant)):
        return f"`{ast.unparse(node.args[1])}` (environment: `{node.args[0].value}`)"
    text = ast.get_source_segment(source, node) or ast.unparse(node)
    return f"`{' '.join(text.split())}`"


def _records(config: str) -> dict[str, tuple[str, str, dict[str, str]]]:
    """Section name -> (its reader's dotted name, the first paragraph of its docstring, {key: its help}): every
    section of ``autograder.settings.Course`` (a record's fields and their help), else every section
    that ``config`` (``course_config.py``'s source) hands to a configurable of nbgrader's (``for _name, _value in
    COURSE["NAME"].items(): setattr(c.Class, ...)``: the traits' ``help``)."""
    configurables = dict(re.findall(r'COURSE\["(\w+)"\]\.items\(\):\s*\n\s*setattr\(c\.(\w+)', config))
    found = {}
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if not any(f"class {name}(" in source for name in configurables.values()):
            continue
        tree = ast.parse(source)
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        classes = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}

        def entry(record: ast.ClassDef, fields: dict[str, str], module=module) -> tuple[str, str, dict[str, str]]:
            doc = (ast.get_docstring(record) or "").split("\n\n")[0]
            return f"{module}.{record.name}", _markdown(" ".join(doc.split())), fields

        for section, name in configurables.items():
            if name in classes:
                traits = {}
                for node in classes[name].body:
                    call = node.value if isinstance(node, ast.Assign) else None
                    while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                            and isinstance(call.func.value, ast.Call):      # Float(..., help=...).tag(config=True)
                        call = call.func.value
                    if isinstance(call, ast.Call):
                        helps = [k.value.value for k in call.keywords
                                 if k.arg == "help" and isinstance(k.value, ast.Constant)]
                        traits.update({t.id: helps[0] for t in node.targets if helps and isinstance(t, ast.Name)})
                found[section] = entry(classes[name], {k: _markdown(v) for k, v in traits.items()})
    found.update(_sections())
    return found


def _field_help(node: ast.AnnAssign, comments: dict[int, str]) -> str:
    """A record field's help: ``_help("...")`` or ``field(metadata={"help": "..."})``, else its comment."""
    value = node.value
    if isinstance(value, ast.Call) and ast.unparse(value.func) == "_help" and value.args \
            and isinstance(value.args[0], ast.Constant):
        return value.args[0].value
    if isinstance(value, ast.Call):
        for keyword in value.keywords:
            if keyword.arg == "metadata" and isinstance(keyword.value, ast.Dict):
                for key, text in zip(keyword.value.keys, keyword.value.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "help" and isinstance(text, ast.Constant):
                        return text.value
    return comments.get(node.lineno, "")


def _sections(path: Path = ROOT / "autograder" / "settings.py") -> dict[str, tuple[str, str, dict[str, str]]]:
    """Section name -> its record of ``autograder.settings`` (each field of ``Course`` whose type is a record
    there), as ``_records``."""
    source = path.read_text(encoding="utf-8")
    tree, comments = ast.parse(source), _comments(source)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    found = {}
    for node in classes["Course"].body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and ast.unparse(node.annotation) in classes:
            record = classes[ast.unparse(node.annotation)]
            doc = (ast.get_docstring(record) or "").split("\n\n")[0]
            found[node.target.id] = (f"autograder.settings.{record.name}", _markdown(" ".join(doc.split())), {
                n.target.id: _markdown(_field_help(n, comments)) for n in record.body
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)})
    return found


def _course_dict(tree: ast.Module) -> ast.Dict:
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id == "COURSE" for t in node.targets)):
            return node.value
    raise ValueError("course_config.py: no COURSE = {...}")


def course_config_reference(path: Path = ROOT / "course_config.py") -> tuple[str, list[str]]:
    """The reference's Markdown, and the keys that say nothing about themselves.

    A key without a comment of its own shares the one of the key before it (``course_id`` and ``assignments`` are
    explained together); a section's key without one is explained by its reader's help, else by the section's."""
    source = path.read_text(encoding="utf-8")
    lines, comments, taken = source.splitlines(), _comments(source), set()
    records = _records(source)
    silent: list[str] = []
    out: list[str] = []
    previous = None
    for key, value in zip(*(lambda d: (d.keys, d.values))(_course_dict(ast.parse(source))), strict=True):
        name = key.value
        text = _help(value, key, lines, comments, taken)
        if not text and previous:
            text = f"See `{previous}` above."
        elif not text:
            silent.append(name)
        previous = name if not text.startswith("See ") else previous
        out += [f"## `{name}`", "", text, ""]
        if not isinstance(value, ast.Dict):
            out += [f"Default: {_value(value, source)}", ""]
            continue
        reader = records.get(name)
        if reader:
            out += [f"Read by `{reader[0]}`: {reader[1]}", ""]
        for inner_key, inner in zip(value.keys, value.values, strict=True):
            inner_name = inner_key.value
            inner_text = _help(inner, inner_key, lines, comments, taken)
            own = reader[2].get(inner_name, "") if reader else ""
            if own and own not in inner_text:
                inner_text = f"{inner_text} ({own})" if inner_text else own
            out.append(f"`{inner_name}` = {_value(inner, source)}\n: {inner_text or 'See above.'}\n")
    return "\n".join(out), silent


# ----------------------------------------------------------------------------------------------- Sphinx
GENERATORS = {"cli": lambda: (cli_reference(), []), "course-config": course_config_reference}


def _source_read(app, docname: str, source: list[str]) -> None:
    def generate(match: re.Match) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            logger.warning("%s: unknown generated reference %r (known: %s)", docname, name, ", ".join(GENERATORS),
                           location=docname)
            return ""
        text, silent = GENERATORS[name]()
        for key in silent:
            logger.warning("course_config.py: COURSE[%r] has no comment that says what it does", key,
                           location=docname)
        return text

    source[0] = MARKER.sub(generate, source[0])


def setup(app):
    app.connect("source-read", _source_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
