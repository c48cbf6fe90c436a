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
"""
from __future__ import annotations

import functools
import re

import bleach
from bleach import html5lib_shim
from bleach.html5lib_shim import Filter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

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


def markdown_to_safe_html(source: str, attachments=None) -> str:
    """A markdown cell's (or output's) HTML, rendered as nbconvert renders markdown cells and made inert (``clean``).

    A pure function of its arguments: without attachments, the answer is remembered (``_rendered``), because most of
    a submission's markdown is the release's text, the same in every notebook a worker grades (~40 ms a cell)."""
    if attachments:
        return _render(source, attachments)
    return _rendered(source)


@functools.lru_cache(maxsize=2048)
def _rendered(source: str) -> str:
    return _render(source, {})


# mistune's table plugin alone finds tables only at the top level: a table inside a list item (the release notebooks'
# forbidden-routines table) or a quote stayed raw pipes in formgrader's view and the feedback. JupyterLab renders them.
NESTED_TABLES = ("mistune.plugins.table.table_in_list", "mistune.plugins.table.table_in_quote")


def _render(source: str, attachments: dict) -> str:
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath, import_plugin

    source = inert_tex(source)
    renderer = IPythonRenderer(escape=False, attachments=attachments)   # as nbconvert renders markdown cells
    plugins = [import_plugin(name) for name in (*MarkdownWithMath.DEFAULT_PLUGINS, *NESTED_TABLES)]
    return one_block(clean(MarkdownWithMath(renderer=renderer, plugins=plugins).render(source)))


class SanitizeStudentHTML(Preprocessor):
    """Make a submission's markdown, raw cells and rich outputs inert (see the module's docstring)."""

    enabled = Bool(True, help="On unless switched off explicitly: nbgrader registers its preprocessors without "
                   "enabling them, and nbconvert's default is off.").tag(config=True)

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            self._cell(cell)
        return nb, resources

    def _cell(self, cell):
        meta = cell.get("metadata", {})
        nbgrader = meta.get("nbgrader")
        if isinstance(nbgrader, dict) and "grade_id" in nbgrader and not SAFE_ID.match(str(nbgrader["grade_id"])):
            nbgrader["grade_id"] = "invalid-id"
        if cell.cell_type == "markdown":
            source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
            cell.source = markdown_to_safe_html(source, cell.get("attachments"))
            cell.pop("attachments", None)   # embedded above (data: URIs of raster images only)
        elif cell.cell_type == "raw":
            cell.source = bleach.clean(cell.source, tags=set(), strip=False)
            meta.pop("format", None)
            meta.pop("raw_mimetype", None)
        elif cell.cell_type == "code":
            cell.outputs = [self._output(o) for o in cell.get("outputs", [])]

    def _output(self, output):
        data = output.get("data")
        if not isinstance(data, dict):
            return output
        dropped = sorted(k for k in data if k not in KEPT_OUTPUTS)
        for key in dropped:
            del data[key]
        if "text/html" in data:
            html = data["text/html"]
            data["text/html"] = clean(html if isinstance(html, str) else "".join(html))
        if "text/latex" in data:
            tex = data["text/latex"]
            data["text/latex"] = inert_tex(tex if isinstance(tex, str) else "".join(tex))
        if "text/markdown" in data:
            md = data.pop("text/markdown")
            data.setdefault("text/html", markdown_to_safe_html(md if isinstance(md, str) else "".join(md)))
        if dropped:
            note = Notice.OUTPUT_HIDDEN.korean(types=", ".join(dropped))
            plain = data.get("text/plain", "")
            data["text/plain"] = (plain if isinstance(plain, str) else "".join(plain)) + ("\n" if plain else "") + note
        output.get("metadata", {}).pop("text/html", None)   # no 'isolated' iframes either
        return output
