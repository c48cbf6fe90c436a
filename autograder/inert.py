"""Text of a submission made inert where it is printed or written for machines: a CI log, JUnit XML, JSON.

A submission's text (an exception's message, a review item, a file name) can hold anything: newlines followed by a
GitHub Actions workflow command (``::error::``, ``::add-mask::``, ``::stop-commands::``; Azure's ``##vso[``), a
terminal's escape sequences, characters XML 1.0 does not allow (``\\x00``, ``\\x1b``), lone surrogates that no UTF-8
file can hold. What is shown stays readable: such a character is written as its Python escape (``\\x1b``, ``\\n``),
visible, never dropped silently.

- ``one_line``: the text on one line, every control character (newlines too) escaped;
- ``console``: lines for a CI log: each line's controls escaped, and a line that would start a workflow command (also
  after leading blanks, which the runner skips) begins with a backslash instead;
- ``xml_text``: text that XML 1.0 can hold (tabs and newlines kept);
- ``json_safe``: a value for ``json.dump`` with every string encodable as UTF-8.
"""
from __future__ import annotations

import re

# C0 and C1 controls, DEL, the line and paragraph separators, lone surrogates: on one line, none of them is kept
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_CONTROL_BUT_TAB = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
# what XML 1.0 does not allow (its Char production), and lone surrogates; tab, newline and carriage return are kept
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_NOT_UTF8 = re.compile("[\ud800-\udfff]")
# a workflow command of GitHub Actions (``::name ...::``, and the older ``##[name]``) or Azure Pipelines (``##vso[``)
_COMMAND = re.compile(r"^\s*(::|##\[|##vso\[)")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return {9: "\\t", 10: "\\n", 13: "\\r"}.get(code) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def one_line(text) -> str:
    """``text`` on one line: every control character (newline, carriage return, escape, ...) as its escape."""
    return _CONTROL.sub(_escape, str(text))


def console(text) -> str:
    """``text`` for a CI log: its lines kept, each line's control characters escaped, and no line that a CI runner
    reads as a workflow command (such a line gets a backslash in front)."""
    lines = []
    for line in str(text).split("\n"):
        line = _CONTROL_BUT_TAB.sub(_escape, line)
        lines.append("\\" + line if _COMMAND.match(line) else line)
    return "\n".join(lines)


def xml_text(text) -> str:
    """``text`` with what XML 1.0 cannot hold escaped (NUL, escape and other controls, lone surrogates)."""
    return _NOT_XML.sub(_escape, str(text))


def json_safe(value):
    """``value`` (dicts, lists, strings, numbers) with every string encodable as UTF-8 (lone surrogates escaped)."""
    if isinstance(value, str):
        return _NOT_UTF8.sub(_escape, value)
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
