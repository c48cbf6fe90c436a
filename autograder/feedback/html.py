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

from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import default

from autograder import settings
from autograder.messages import Label

TEMPLATES = Path(__file__).resolve().parent / "templates"
KATEX = settings.ROOT / "build" / "katex"
KATEX_FILES = ("katex.min.js", "katex.min.css", "contrib/auto-render.min.js")
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
            "decimals": int(decimals if decimals is not None else settings.load().score_decimals)}


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
        resources = dict(resources or {})
        resources["autograder"] = page_resources()
        resources["autograder"]["extension"] = extension_text(resources.get("nbgrader") or {})
        return super().from_notebook_node(nb, resources, **kw)


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
