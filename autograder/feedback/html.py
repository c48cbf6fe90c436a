"""The students' feedback page: nbgrader's ``generate_feedback`` HTML with the course's template.

``FeedbackExporter`` is the exporter of ``GenerateFeedback`` (``c.GenerateFeedback.exporter_class`` in
``course_config.py``): nbgrader's HTMLExporter with the template ``autograder-feedback``
(``autograder/feedback/templates``, adapted from nbgrader's own ``feedback``) and four things in its resources:

* ``labels``: the page's headings in Korean (``autograder.messages.Label``: "채점 셀", "점수", "의견", "지각 감점"
  instead of "Test cell", "Score", "Comment", "Late submission penalty");
* ``decimals``: the course's score precision (``COURSE["score_decimals"]``: 2.625 stays 2.625, not 2.62);
* ``extension``: the student's extension and the due date it gives, where one was granted
  (``python -m autograder extend``; nbgrader's per-submission ``extension``), read from the gradebook;
* ``katex``: KaTeX (JavaScript, auto-render, CSS with its fonts as data: URIs) inlined into the page, so that LaTeX
  renders without any network: a classroom hub may have no internet, and nbgrader's template loads MathJax from a
  CDN. KaTeX comes from npm (``scripts/setup.sh`` puts its dist files in ``build/katex``; the hub copies them into
  the grading account's course copy). Where it is missing the page still renders, with the TeX as text.

Student content is made inert before it gets here (``autograder/feedback/sanitize.py``: no student script runs);
KaTeX renders the math of the page's text with ``trust: false`` (no ``\\href``, ``\\url`` or HTML extensions).

Formgrader's manual-grading view gets the same math: its exporter (nbconvert's ``HTMLExporter``, created by
formgrader) is configured in ``course_config.py`` with the template ``autograder-formgrade`` (nbgrader's
``formgrade`` with KaTeX inlined instead of MathJax from a CDN) and the preprocessor ``CourseResources``, which puts
the same resources into the page.
"""
from __future__ import annotations

import base64
import re
from functools import cache
from pathlib import Path

from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.preprocessors import Preprocessor
from traitlets import default

from autograder import scores, settings
from autograder.messages import Label

TEMPLATES = Path(__file__).resolve().parent / "templates"
KATEX = settings.ROOT / "build" / "katex"
KATEX_FILES = ("katex.min.js", "katex.min.css", "contrib/auto-render.min.js")
# HTMLExporter's own words for a picture without alternative text (nbconvert's from_notebook_node)
NO_ALT = "No description has been provided for this image"
# What no tag is read in (a script's or style's text, a comment), and an <img> tag whose attribute values may hold ">"
RAW_TEXT = re.compile(r"(<script\b.*?</script\s*>|<style\b.*?</style\s*>|<!--.*?-->)", re.S | re.I)
IMG = re.compile(r"(<img\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*?)(\s*/?>)", re.I)
QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
ALT = re.compile(r"\salt(?=[\s=/>]|$)", re.I)
FONT = re.compile(r'url\(fonts/([A-Za-z0-9_-]+)\.woff2\) format\("woff2"\)(?:,url\([^)]*\) format\("[a-z]+"\))*')


def nbgrader_templates() -> Path:
    import nbgrader.server_extensions.formgrader.handlers as handlers

    return Path(handlers.template_path)


def template_dirs() -> list[str]:
    """Where the course's templates are found: its own, then nbgrader's (which they extend)."""
    return [str(TEMPLATES), str(nbgrader_templates())]


def template_paths() -> list[str]:
    """Files the course's templates name directly: nbgrader's templates ('formgrade/index.html.j2', which
    ``autograder-formgrade`` extends) and Bootstrap's stylesheet (which ``autograder-feedback`` inlines)."""
    static = nbgrader_templates().parent / "static" / "node_modules" / "bootstrap" / "dist" / "css"
    return [str(nbgrader_templates()), str(static)]


@cache
def katex(folder: Path = KATEX) -> dict | None:
    """KaTeX's script, auto-render script and stylesheet (fonts inlined as data: URIs), or None where missing."""
    if not all((folder / name).is_file() for name in KATEX_FILES):
        return None

    def font(match: re.Match) -> str:
        data = base64.b64encode((folder / "fonts" / f"{match.group(1)}.woff2").read_bytes()).decode("ascii")
        return f'url(data:font/woff2;base64,{data}) format("woff2")'

    css = FONT.sub(font, (folder / "katex.min.css").read_text(encoding="utf-8"))
    js = (folder / "katex.min.js").read_text(encoding="utf-8")
    autorender = (folder / "contrib" / "auto-render.min.js").read_text(encoding="utf-8")
    if "</script" in js + autorender or "</style" in css:
        raise ValueError(f"{folder}: KaTeX's files cannot be inlined into a page (they close its tag)")
    return {"js": js, "autorender": autorender, "css": css}


def page_resources(decimals: int | None = None) -> dict:
    return {"labels": Label.korean_all(), "katex": katex(),
            "decimals": int(decimals if decimals is not None else scores.decimals())}


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback HTML with the course's template, Korean labels, precision and offline KaTeX."""

    @default("template_name")
    def _template_name_default(self):
        return "autograder-feedback"

    @default("extra_template_basedirs")
    def _extra_template_basedirs_default(self):
        return template_dirs()

    @default("extra_template_paths")
    def _extra_template_paths_default(self):          # bootstrap.min.css, which the template inlines
        return template_paths()

    def from_notebook_node(self, nb, resources=None, **kw):
        """HTMLExporter's page with the course's resources. What HTMLExporter does after rendering is done here
        without its BeautifulSoup pass, which parses and writes the whole page again (KaTeX inlined, every token of
        highlighted code a tag: most of a page's time, benchmarks/results/speed.md) for two changes: the
        alternative text of a picture without one (``alt_text``, the same words) and ``tabindex`` on JupyterLab's
        cell and output wrappers, which this template (nbconvert's classic) does not have. The page, parsed, is
        HTMLExporter's (tests/demo/test_classroom.py)."""
        resources = with_page_resources(resources)
        # HTMLExporter.from_notebook_node up to its rendering (nbconvert 7.17.2: the patch table's FEEDBACK_RESOURCES)
        langinfo = nb.metadata.get("language_info", {})
        lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
        highlight_code = self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
        resources = self._init_resources(resources)
        filter_data_type = WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self,
                                                 resources=resources)
        self.register_filter("highlight_code", highlight_code)
        self.register_filter("filter_data_type", filter_data_type)
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        html, missing = alt_text(html)
        if missing:
            self.log.warning("Alternative text is missing on %s image(s).", missing)
        return html, resources


def with_page_resources(resources: dict | None) -> dict:
    """A copy of nbconvert's ``resources`` with the feedback page's own under ``"autograder"`` (``page_resources``
    and the student's ``extension``, read with nbgrader's resources)."""
    resources = dict(resources or {})
    resources["autograder"] = {**page_resources(), "extension": extension_text(resources.get("nbgrader") or {})}
    return resources


def alt_text(html: str) -> tuple[str, int]:
    """``html`` with ``alt="No description has been provided for this image"`` (HTMLExporter's words) added last to
    every ``<img>`` tag without an ``alt`` attribute (outside scripts, styles and comments; a quoted attribute value
    may hold ``>``), and how many there were.

    Example:
        >>> alt_text('<p><img src="data:image/png;base64,AA=="></p>')
        ('<p><img src="data:image/png;base64,AA==" alt="No description has been provided for this image"></p>', 1)
    """
    count = 0

    def add(match: re.Match) -> str:
        nonlocal count
        if ALT.search(QUOTED.sub('""', match.group(1))):     # an alt attribute, with or without a value
            return match.group(0)
        count += 1
        return f'{match.group(1)} alt="{NO_ALT}"{match.group(2)}'

    parts = RAW_TEXT.split(html)
    for i in range(0, len(parts), 2):          # the odd parts are scripts, styles and comments: no tags in them
        parts[i] = IMG.sub(add, parts[i])
    return "".join(parts), count


def extension_text(nbgrader: dict) -> str:
    """The page's line on the student's extension (``python -m autograder extend``): its length and the due date it
    gives, in the course's time zone; "" where there is none (or no gradebook to ask)."""
    student, assignment, db_url = (nbgrader.get(k) for k in ("student", "assignment", "db_url"))
    if not (student and assignment and db_url):
        return ""
    from nbgrader.api import Gradebook, MissingEntry

    from autograder.gradebook.extensions import local

    try:
        with Gradebook(db_url) as gb:
            submission = gb.find_submission(assignment, student)
            extension, due = submission.extension, submission.duedate
    except MissingEntry:
        return ""
    if not extension:
        return ""
    days, rest = divmod(round(extension.total_seconds() / 3600, 2), 24)
    length = " ".join(([Label.DAYS.korean(days=f"{days:g}")] if days else [])
                      + ([Label.HOURS.korean(hours=f"{rest:g}")] if rest else []))
    return Label.EXTENSION.korean(days=length, due=local(due))


class CourseResources(Preprocessor):
    """Puts the course's page resources (``page_resources``: Korean labels, precision, KaTeX) into an exporter's
    resources, for the course's templates (formgrader's manual-grading view: ``autograder-formgrade``)."""

    def preprocess(self, nb, resources):
        resources["autograder"] = page_resources()
        return nb, resources
