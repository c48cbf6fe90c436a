"""No student HTML runs anywhere: a submission's markdown, raw cells and rich outputs are made inert.

``SanitizeStudentHTML`` is an nbconvert preprocessor. It runs last in ``c.Autograde.autograde_preprocessors``
(after nbgrader saved the grades, so written answers keep their checksums), so the notebook kept in
``autograded/``, which formgrader shows to the instructors and ``generate_feedback`` turns into the student's HTML,
holds no active content; it runs again in ``c.GenerateFeedback.preprocessors`` for notebooks autograded before.

What it does (the templates of nbgrader's feedback and formgrader render markdown unsanitised, so the notebook
itself is changed, not the templates' options):

- a markdown cell is rendered with nbconvert's own markdown renderer, cleaned with bleach (an allow-list of tags
  and attributes: no ``script``, ``iframe``, ``svg``, ``style``, event handlers; links only to http, https and
  mailto (never to a data: URL), pictures only from data: URIs of raster images) and stored back as one block of
  HTML on one line, so that rendering it again as markdown passes it through as it is (and text such as a link
  written inside code is not parsed a second time);
- no element of the student's takes an ``id`` of the page: every ``id`` (also those nbconvert makes from a
  heading's text) is prefixed with ``user-content-`` (as GitHub does), and links to ``#name`` with it, so that
  formgrader, which binds a grade's controls to the first element with the grade's id
  (``$("#" + grade_id).parents(".nbgrader_cell")``), and the feedback's links to grade cells find the real cell;
- classes only from an allow-list of what the renderers make (``CLASSES``: code highlighting, heading anchors,
  task lists): no Bootstrap alert, button or panel, no formgrader ``score`` or ``nbgrader_cell``;
- TeX that a math renderer (MathJax, loaded by the feedback and formgrader pages; KaTeX) turns into links, ids,
  classes, styles, pictures or loaded extensions (``\\href``, ``\\cssId``, ``\\class``, ``\\htmlId``, ``\\require``,
  ... : ``TEX_ACTIVE``) is made plain text, also when its backslash is written as a character reference; other TeX
  is left for the page's math rendering;
- a raw cell becomes escaped text;
- outputs: ``text/html`` is cleaned the same way, ``text/markdown`` rendered then cleaned, ``image/svg+xml`` and
  ``application/javascript`` (and any other type a browser would run) removed with a note in ``text/plain``;
- an nbgrader ``grade_id`` that is not a plain identifier (it is written into the page as an anchor) is replaced.

Bounded like every other step that parses a submission (docs/security/bounds.md). Rendering and cleaning cost
far more than the bytes (html5lib's tree walker is quadratic in an element's children and in the nesting depth: 64 KiB
of ``# x`` headings took 45 s, 20,000 nested ``<div>`` 33 s), so before anything is rendered each markdown or raw cell
(and each HTML or markdown output) is measured: its characters (``MAX_CELL_CHARS``), the notebook's rendered
characters so far (``MAX_CHARS``), and its HTML tags and their nesting (``MAX_TAGS``, ``MAX_DEPTH``: counted over the
tags of the source, and again over the rendered HTML before it is cleaned). A cell over a bound is shown as plain
text (escaped, at most ``MAX_SHOWN`` characters of such text in all) under a Korean note; the score is not touched.
What is within the bounds is rendered and cleaned in a child forked from this process (``graders.bounded``: at most
``RENDER_MB`` MiB more than it inherited and ``RENDER_SECONDS``), whose failure shows those cells as plain text too.
The release's own markdown, the same in every notebook a worker grades, is remembered (``RenderCache``, at most
``CACHE_BYTES``), so an honest notebook forks no child at all for it.

Once per submission: with ``record_dir`` set (the course's configuration does), the digest of every part of a
notebook this step governs is recorded after it ran (``<record_dir>/<sha256>``, in the course directory, where no
student can write), and a notebook whose parts have a recorded digest is inert already and is passed as it is:
``GenerateFeedback`` does not render the autograded notebook again.
"""
from __future__ import annotations

import hashlib
import html as html_text
import json
import re
import time
from collections import OrderedDict
from pathlib import Path

import bleach
from bleach import html5lib_shim
from bleach.html5lib_shim import Filter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, Unicode

from autograder.messages import Notice

TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub",
    "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul",
})
PROTOCOLS = frozenset({"http", "https", "mailto"})
IMAGE_DATA = re.compile(r"^data:image/(png|jpe?g|gif|webp);base64,[A-Za-z0-9+/=\s]*$")
SAFE_ID = re.compile(r"^[A-Za-z0-9_\-]+$")
KEPT_OUTPUTS = {"text/plain", "text/html", "text/markdown", "text/latex", "image/png", "image/jpeg", "image/gif"}
ID_PREFIX = "user-content-"


def _pygments_classes() -> frozenset:
    from pygments.token import STANDARD_TYPES

    return frozenset(c for c in STANDARD_TYPES.values() if c)


# The classes nbconvert's markdown renderer makes (what the page's own CSS styles): code blocks highlighted by
# pygments (``highlight``, its token classes ``k``, ``nf``, ``mi``, ..., ``hll``), heading anchors
# (``anchor-link``), task lists (``task-list-item``); and ``language-<name>`` on a code block in a language pygments
# does not know (``LANGUAGE``). Not kept: ``jp-Mermaid``/``mermaid`` (a Mermaid renderer on the page would run the
# student's diagram), and everything else (Bootstrap's ``alert``, ``btn``, ``panel``, formgrader's ``score``,
# ``nbgrader_cell``, ``full-credit``, MathJax's ``tex2jax_process``, ...).
CLASSES = frozenset({"highlight", "hll", "anchor-link", "task-list-item"}) | _pygments_classes()
LANGUAGE = re.compile(r"^language-[A-Za-z0-9_+#.-]{1,40}$")


def _attribute(tag: str, name: str, value: str) -> bool:
    if name in ("class", "id", "title", "align", "colspan", "rowspan"):
        return True
    if tag == "a" and name == "href":
        # the protocol is checked by bleach (PROTOCOLS, and data: for pictures); relative anchors are fine; a link
        # to a data: URL (a page, an SVG, a download made of the student's bytes) is not
        return not _scheme_text(value).startswith("data:")
    if tag == "img" and name in ("alt", "width", "height"):
        return True
    if tag == "img" and name == "src":
        return bool(IMAGE_DATA.match(value))
    return False


def _scheme_text(value: str) -> str:
    """A URL as bleach reads its protocol (``sanitize_uri_value``): character references decoded; blanks, controls,
    backticks and non-ASCII characters dropped; lower case (``" D&#65;TA:text/html"`` -> ``"data:text/html"``)."""
    text = re.sub(r"[`\000-\040\177-\240\s]+", "", html5lib_shim.convert_entities(value))
    return re.sub(r"[^\x00-\x7f]", "", text).lower()


def student_id(value: str) -> str:
    """The ``id`` a student's element keeps: never one of the page's own."""
    return value if value.startswith(ID_PREFIX) else ID_PREFIX + value


def student_classes(value: str) -> str:
    """The allow-listed classes of a ``class`` attribute ("" when none is left)."""
    return " ".join(c for c in value.split() if c in CLASSES or LANGUAGE.match(c))


class StudentAttributes(Filter):
    """After bleach's own filter: ids prefixed (and same-page links with them), classes allow-listed."""

    def __iter__(self):
        for token in super().__iter__():
            if token["type"] in ("StartTag", "EmptyTag") and token.get("data"):
                attributes = {}
                for (namespace, name), value in token["data"].items():
                    if name == "id":
                        value = student_id(value) if value else value
                    elif name == "class":
                        value = student_classes(value)
                        if not value:
                            continue
                    elif name == "href" and value.startswith("#") and len(value) > 1:
                        value = "#" + student_id(value[1:])
                    attributes[(namespace, name)] = value
                token["data"] = attributes
            yield token


_CLEANER = bleach.sanitizer.Cleaner(tags=TAGS, attributes=_attribute, protocols=PROTOCOLS | {"data"}, strip=False,
                                    strip_comments=True, filters=[StudentAttributes])


def clean(html: str) -> str:
    """HTML with nothing that runs: allow-listed tags, attributes and classes, safe link protocols, the student's ids
    prefixed; the rest escaped. TeX in it that MathJax would make active is made plain (``inert_tex``)."""
    return inert_tex(_CLEANER.clean(html))


def one_block(html: str) -> str:
    """HTML that a markdown renderer passes through unchanged: one ``<div>`` on one line (newlines as ``&#10;``,
    which a browser reads as a newline inside ``<pre>`` and as a space elsewhere)."""
    return "<div class=\"student-markdown\">" + html.replace("\r", "").replace("\n", "&#10;") + "</div>"


# The TeX macros that make links (``\\href``, ``\\url``: ``javascript:`` ones too), set an element's id, class,
# style or data attributes (MathJax's ``\\cssId``, ``\\class``, ``\\style``, ``\\data``, ``\\mmlToken`` with
# attributes; KaTeX's ``\\htmlId``, ``\\htmlClass``, ``\\htmlStyle``, ``\\htmlData``), load a picture
# (``\\includegraphics``) or an extension (``\\require``), for whichever math renderer a page uses. A backslash may
# be written as a character reference in HTML (the browser decodes it before the renderer reads the text).
TEX_ACTIVE = re.compile(r"(?:\\|&#0*92;|&#[xX]0*5[cC];|&bsol;)(href|url|cssId|class|style|data|mmlToken|require|"
                        r"htmlId|htmlClass|htmlStyle|htmlData|includegraphics)(?![A-Za-z])")


def inert_tex(text: str) -> str:
    """TeX for MathJax (which the feedback and formgrader pages load) with MathJax's active macros made plain text
    (``\\cssId`` -> ``\\mathrm{cssId}``)."""
    return TEX_ACTIVE.sub(r"\\mathrm{\1}", text)


# mistune's table plugin alone finds tables only at the top level: a table inside a list item (the release notebooks'
# forbidden-routines table) or a quote stayed raw pipes in formgrader's view and the feedback. JupyterLab renders them.
NESTED_TABLES = ("mistune.plugins.table.table_in_list", "mistune.plugins.table.table_in_quote")


def _markdown_html(source: str, attachments: dict) -> str:
    """``source`` rendered as nbconvert renders a markdown cell (not cleaned yet), its active TeX made plain first."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath, import_plugin

    source = inert_tex(source)
    renderer = IPythonRenderer(escape=False, attachments=attachments)   # as nbconvert renders markdown cells
    plugins = [import_plugin(name) for name in (*MarkdownWithMath.DEFAULT_PLUGINS, *NESTED_TABLES)]
    return MarkdownWithMath(renderer=renderer, plugins=plugins).render(source)


# ----------------------------------------------------------------------------------------------- the bounds
# The course's notebooks: at most 3,800 characters in a markdown cell and 40,000 in a notebook; at most 430 tags in
# a cell's rendered HTML, nested at most 7 deep. Within these bounds the slowest cell measured (64 KiB of markdown
# that renders to 4,000 tags) renders and cleans in about a second.
MAX_CELL_CHARS = 64 * 1024     # characters of one markdown or raw cell, or of one HTML or markdown output
MAX_CHARS = 128 * 1024         # characters rendered in one notebook, all cells and outputs together
MAX_TAGS = 4_000               # HTML tags of one cell (its source's, then its rendered HTML's)
MAX_DEPTH = 32                 # elements nested in one another in one cell
MAX_SHOWN = 64 * 1024          # characters shown as plain text in one notebook; the rest is cut with a note
RENDER_SECONDS = 20.0          # the child that renders and cleans one notebook's cells
RENDER_MB = 512                # and the memory it may use above what it inherited
CACHE_BYTES = 16 << 20         # what a process remembers of rendered cells (the release's markdown)

_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]*)")
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                  "track", "wbr"})


def tag_shape(html: str, max_tags: int = MAX_TAGS, max_depth: int = MAX_DEPTH) -> tuple[int, int]:
    """(tags, depth) of ``html`` as an HTML parser would nest it, counted over its tags in one pass and given up
    as soon as either passes its bound (the counts then are the bound + 1). A closing tag closes the innermost open
    element of its name and those inside it, and is ignored where none is open (as html5lib does: ``</span>`` cannot
    undo a ``<div>``); a tag in a comment or an attribute counts too (more than a parser sees, never less)."""
    tags, depth, stack = 0, 0, []
    for match in _TAG.finditer(html):
        tags += 1
        if tags > max_tags:
            break
        name = match.group(2).lower()
        if match.group(1):
            if name in stack:
                del stack[len(stack) - 1 - stack[::-1].index(name):]
        elif name not in VOID:
            stack.append(name)
            depth = max(depth, len(stack))
            if depth > max_depth:
                break
    return tags, depth


def _over(shape: tuple[int, int]) -> bool:
    return shape[0] > MAX_TAGS or shape[1] > MAX_DEPTH


def _too_deep() -> dict:
    return {"code": "MARKDOWN_TOO_DEEP", "max_tags": MAX_TAGS, "max_depth": MAX_DEPTH}


class RenderCache:
    """Rendered cells remembered by their source, least recently used first out, at most ``limit`` characters of
    sources and results together; a cell bigger than a sixteenth of it is not remembered."""

    def __init__(self, limit: int = CACHE_BYTES):
        self.limit, self.size, self._items = limit, 0, OrderedDict()

    def get(self, source: str):
        value = self._items.get(source)
        if value is not None:
            self._items.move_to_end(source)
        return value

    def put(self, source: str, value: str) -> None:
        cost = len(source) + len(value)
        if cost > self.limit // 16 or source in self._items:
            return
        self._items[source] = value
        self.size += cost
        while self.size > self.limit:
            old, kept = self._items.popitem(last=False)
            self.size -= len(old) + len(kept)


_CACHE = RenderCache()


def _render_one(piece: dict):
    """In the child: one piece rendered and cleaned, or the reason it is shown as text (its HTML over the bounds)."""
    kind, text = piece["kind"], piece["text"]
    if kind == "raw":
        return {"html": bleach.clean(text, tags=set(), strip=False)}
    if kind == "markdown":
        text = _markdown_html(text, piece.get("attachments") or {})
    shape = tag_shape(text)
    if _over(shape):
        return {"notice": _too_deep()}
    html = clean(text)
    return {"html": one_block(html) if kind == "markdown" else html}


def _render_all(pieces: list):
    """In the child: every piece (``_render_one``), as UTF-8 JSON in an array of bytes (``bounded.compute``)."""
    import numpy as np

    done = [_render_one(piece) for piece in pieces]
    return np.frombuffer(json.dumps(done).encode("utf-8"), dtype=np.uint8)


def render_bounded(pieces: list) -> list | None:
    """The pieces rendered and cleaned in a forked child under ``RENDER_MB`` MiB and ``RENDER_SECONDS``: one result
    each (``{"html": ...}`` or ``{"notice": ...}``), or None when the child could not finish (its limits)."""
    from autograder.graders import bounded
    import nbconvert.filters.markdown_mistune  # noqa: F401 - imported here once, not in every child

    # what the child may send back: its HTML is at most this many times its source (escaped text: 6 characters for
    # one, each UTF-8 byte of the source written as ``&#...;`` at most 8), and its notes
    limit = 8 * 4 * sum(len(p["text"]) for p in pieces) + 4096 * len(pieces) + (1 << 20)
    try:
        data, _ = bounded.compute(_render_all, (pieces,), {}, limit=RENDER_MB << 20,
                                  deadline=time.monotonic() + RENDER_SECONDS, result_bytes=limit)
    except (bounded.Refused, bounded.Unanswerable):
        return None
    done = json.loads(data.tobytes().decode("utf-8"))
    return done if isinstance(done, list) and len(done) == len(pieces) else None


def _notice(fields: dict) -> str:
    fields = dict(fields)
    return getattr(Notice, fields.pop("code")).korean(**fields)


class _Shown:
    """What a notebook may still show as plain text (``MAX_SHOWN`` characters in all)."""

    def __init__(self):
        self.left = MAX_SHOWN

    def text(self, text: str, notice: str) -> str:
        """``text`` as inert HTML: the note, then the text escaped in a ``<pre>`` (cut where the notebook's share
        ends, with a note); TeX that a math renderer would make active made plain (``inert_tex``)."""
        kept = text[:max(0, self.left)]
        self.left -= len(kept)
        cut = len(text) - len(kept)
        tail = Notice.MARKDOWN_CUT.korean(count=cut, limit=MAX_SHOWN) if cut else ""
        body = "\n".join(html_text.escape(part) for part in (kept, tail) if part)
        return inert_tex(f"<p><strong>{html_text.escape(notice)}</strong></p><pre>{body}</pre>")


def inert_digest(nb) -> str:
    """sha256 of every part of ``nb`` that ``SanitizeStudentHTML`` governs: the markdown and raw cells (source,
    attachments, raw format), the code cells' outputs (their data and metadata) and every cell's nbgrader grade id."""
    parts = []
    for cell in nb.cells:
        meta = cell.get("metadata", {})
        nbgrader = meta.get("nbgrader")
        grade_id = nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None
        if cell.get("cell_type") == "code":
            outputs = [[o.get("output_type"), o.get("data"), o.get("metadata")] for o in cell.get("outputs", [])]
            parts.append(["code", grade_id, outputs])
        else:
            source = cell.get("source", "")
            parts.append([cell.get("cell_type"), grade_id, source if isinstance(source, str) else "".join(source),
                          cell.get("attachments"), meta.get("format"), meta.get("raw_mimetype")])
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class SanitizeStudentHTML(Preprocessor):
    """Make a submission's markdown, raw cells and rich outputs inert (see the module's docstring)."""

    enabled = Bool(True, help="On unless switched off explicitly: nbgrader registers its preprocessors without "
                   "enabling them, and nbconvert's default is off.").tag(config=True)
    record_dir = Unicode("", help="Where the digests of the notebooks made inert are recorded (relative to the "
                         "working directory: the course directory), so that a notebook made inert once (by "
                         "autograde) is not rendered again (by generate_feedback); empty: nothing recorded, every "
                         "notebook rendered.").tag(config=True)

    def preprocess(self, nb, resources):
        record = self._record(nb)
        if record is not None and record.exists():
            return nb, resources   # made inert already, exactly as it is
        budget, pieces = [MAX_CHARS], []
        for cell in nb.cells:
            self._cell(cell, budget, pieces)
        self._render(pieces)
        if self.record_dir:
            record = self._record(nb)
            record.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            record.touch()
        return nb, resources

    def _record(self, nb) -> Path | None:
        return Path(self.record_dir) / inert_digest(nb) if self.record_dir else None

    # ------------------------------------------------------------------ measured, then rendered or shown as text
    def _cell(self, cell, budget, pieces):
        meta = cell.get("metadata", {})
        nbgrader = meta.get("nbgrader")
        if isinstance(nbgrader, dict) and "grade_id" in nbgrader and not SAFE_ID.match(str(nbgrader["grade_id"])):
            nbgrader["grade_id"] = "invalid-id"
        if cell.cell_type == "markdown":
            source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
            attachments = cell.pop("attachments", None)   # embedded as data: URIs of raster images only
            self._piece("markdown", source, lambda html: setattr(cell, "source", html), budget, pieces,
                        attachments=attachments)
        elif cell.cell_type == "raw":
            meta.pop("format", None)
            meta.pop("raw_mimetype", None)
            self._piece("raw", cell.source, lambda html: setattr(cell, "source", html), budget, pieces)
        elif cell.cell_type == "code":
            cell.outputs = [self._output(o, budget, pieces) for o in cell.get("outputs", [])]

    def _piece(self, kind, text, put, budget, pieces, attachments=None):
        """Measure one piece: over a bound, it is to be shown as text (with the note why); else rendered from the
        cache or in the child. ``put`` stores its HTML; nothing is stored before every piece was measured."""
        size, notice = len(text), None
        if size > MAX_CELL_CHARS:
            notice = {"code": "MARKDOWN_TOO_BIG", "size": size, "limit": MAX_CELL_CHARS}
        elif size > budget[0]:
            notice = {"code": "MARKDOWN_TOO_MUCH", "limit": MAX_CHARS}
        else:
            budget[0] -= size
            if _over(tag_shape(text)):
                notice = _too_deep()
        cached = _CACHE.get(text) if notice is None and kind == "markdown" and not attachments else None
        pieces.append({"kind": kind, "text": text, "attachments": attachments, "put": put, "notice": notice,
                       "html": cached})

    def _render(self, pieces):
        """Render what is neither over a bound nor remembered in one bounded child, then store every piece's HTML
        in the notebook's order (plain text takes its share of ``MAX_SHOWN`` in that order)."""
        todo = [p for p in pieces if p["notice"] is None and p["html"] is None]
        done = render_bounded([{k: p[k] for k in ("kind", "text", "attachments")} for p in todo]) if todo else []
        failed = {"code": "MARKDOWN_NOT_RENDERED", "seconds": RENDER_SECONDS}
        for index, piece in enumerate(todo):
            result = done[index] if done is not None else {"notice": failed}
            if isinstance(result.get("html"), str):
                piece["html"] = result["html"]
                if piece["kind"] == "markdown" and not piece["attachments"]:
                    _CACHE.put(piece["text"], piece["html"])
            else:
                piece["notice"] = result["notice"] if isinstance(result.get("notice"), dict) else failed
        shown = _Shown()
        for piece in pieces:
            if piece["html"] is None:
                text = shown.text(piece["text"], _notice(piece["notice"]))
                piece["html"] = one_block(text) if piece["kind"] == "markdown" else text
            piece["put"](piece["html"])

    def _output(self, output, budget, pieces):
        data = output.get("data")
        if not isinstance(data, dict):
            return output
        dropped = sorted(k for k in data if k not in KEPT_OUTPUTS)
        for key in dropped:
            del data[key]
        if "text/latex" in data:
            tex = data["text/latex"]
            data["text/latex"] = inert_tex(tex if isinstance(tex, str) else "".join(tex))
        if "text/html" in data:
            html = data["text/html"]
            self._piece("html", html if isinstance(html, str) else "".join(html),
                        lambda value: data.__setitem__("text/html", value), budget, pieces)
        if "text/markdown" in data:
            md = data.pop("text/markdown")
            if "text/html" not in data:
                self._piece("markdown", md if isinstance(md, str) else "".join(md),
                            lambda value: data.__setitem__("text/html", value), budget, pieces)
        if dropped:
            note = Notice.OUTPUT_HIDDEN.korean(types=", ".join(dropped))
            plain = data.get("text/plain", "")
            data["text/plain"] = (plain if isinstance(plain, str) else "".join(plain)) + ("\n" if plain else "") + note
        output.get("metadata", {}).pop("text/html", None)   # no 'isolated' iframes either
        return output
