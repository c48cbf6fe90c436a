"""The cells of the instructor's HTML tables (report.html: the class, each assignment, the regrade requests): every
value escaped, each cell with the value its column sorts by."""
from __future__ import annotations

import html

STUDENT_HEADS = "<th class='l'>학번</th><th class='l'>아이디</th><th class='l'>이름</th><th class='l'>분반</th>"


def td(text, sort=None, cls: str = "") -> str:
    """A table cell with its text escaped, and the value its column sorts by (``data-sort``)."""
    key = "" if sort is None else f" data-sort='{html.escape(str(sort), quote=True)}'"
    return f"<td{key}{f' class={cls!r}' if cls else ''}>{html.escape(str(text))}</td>"


def student_cells(row: dict) -> str:
    """A student's first cells (under ``STUDENT_HEADS``): number, account, name, section."""
    return (td(row.get("number") or "", cls="l") + td(row["id"], cls="l") + td(row["name"], cls="l")
            + td(row.get("section") or "", cls="l"))


def thead(*heads: str) -> str:
    return "<thead><tr>" + "".join(heads) + "</tr></thead>"
