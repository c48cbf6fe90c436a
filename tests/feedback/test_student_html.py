"""Student HTML is made inert (issue 13, point 7) by ``SanitizeStudentHTML``; formatting survives. The browser
proof (feedback, formgrader, instructor report in Chromium) is tests/browser/test_browser_student_html.py."""
from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser

import nbformat
import pytest
from nbconvert.filters.markdown import markdown2html

from autograder.feedback import sanitize
from autograder.feedback.sanitize import SanitizeStudentHTML

ACTIVE_TAGS = {"script", "iframe", "frame", "svg", "math", "object", "embed", "style", "meta", "base", "link", "form",
               "template"}


class _Active(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        if tag in ACTIVE_TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            value = re.sub(r"[\s\x00-\x1f]", "", value or "").lower()
            if name.startswith("on") or name in ("srcdoc", "style", "formaction") or \
                    value.startswith(("javascript:", "vbscript:", "data:text")):
                self.found.append(f"{tag} {name}={value[:40]}")


def active(html: str) -> list[str]:
    """What in ``html`` a browser could run: active elements, event handlers, script URLs (text does not count)."""
    parser = _Active()
    parser.feed(html)
    return parser.found

HOSTILE = [
    "<script>document.title='x'</script>",
    "<img src=x onerror=\"document.title='x'\">",
    "[link](javascript:document.title='x')",
    "<a href=\"JaVaScRiPt:document.title='x'\">a</a>",
    "<a href=\"  javascript:alert(1)\">b</a>",
    "<iframe srcdoc=\"<script>parent.document.title='x'</script>\"></iframe>",
    "<svg onload=\"document.title='x'\"><circle r='5'/></svg>",
    "<details open ontoggle=\"document.title='x'\"><summary>s</summary></details>",
    "<style>body{background:url(javascript:alert(1))}</style>",
    "<object data=\"data:text/html,<script>alert(1)</script>\"></object>",
    "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">",
    "```\ncode\n\n[in code](javascript:alert(1))\n```\n\n<p>after</p>",
    "<img src=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">",
]


def sanitized(nb):
    return SanitizeStudentHTML().preprocess(nb, {})[0]


def test_the_checker_sees_active_html():
    assert all(active(p if "](" not in p else markdown2html(p)) for p in HOSTILE if "```" not in p)


@pytest.mark.parametrize("payload", HOSTILE, ids=range(len(HOSTILE)))
def test_markdown_payload_is_inert_after_rendering(payload):
    nb = sanitized(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("답: " + payload)]))
    html = markdown2html(nb.cells[0].source)   # what nbgrader's feedback and formgrade templates do with it
    assert not active(html), html
    assert "답" in html


def test_formatting_survives():
    source = ("# 제목\n\n**굵게**, *기울임*, `코드`, [링크](https://example.org), $x^2$\n\n"
              "| a | b |\n|---|---|\n| 1 | 2 |\n\n```\nx = 1\n\ny = 2\n```\n\n- 하나\n- 둘")
    html = markdown2html(sanitized(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(source)]))
                         .cells[0].source)
    for fragment in ("<strong>굵게</strong>", "<em>기울임</em>", "<code>코드</code>",
                     '<a href="https://example.org">링크</a>', "$x^2$", "<table>", "<td>2</td>", "<li>둘</li>"):
        assert fragment in html, (fragment, html)
    assert "x = 1&#10;&#10;y = 2" in html   # the code block's lines (a newline inside <pre>)


def test_mathjax_gets_no_link():
    """The feedback page loads MathJax, whose TeX ``\\href`` makes links (``javascript:`` ones too)."""
    cell = nbformat.v4.new_markdown_cell(r"$\href{javascript:alert(1)}{누르기}$ and $x^2$")
    source = sanitized(nbformat.v4.new_notebook(cells=[cell])).cells[0].source
    assert "\\href" not in source and "$x^2$" in source


def page_html(markdown: str) -> str:
    """What formgrader and the feedback page make of a markdown cell of the student's, sanitised."""
    return markdown2html(sanitized(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(markdown)]))
                         .cells[0].source)


def attributes(html: str, name: str) -> list[str]:
    class Parser(HTMLParser):
        found: list = []

        def handle_starttag(self, tag, attrs):
            self.found += [value for key, value in attrs if key == name]

    parser = Parser()
    parser.found = []
    parser.feed(html)
    return parser.found


def test_no_student_element_takes_an_id_of_the_page():
    """formgrader binds a grade's controls to ``$("#" + grade_id).parents(".nbgrader_cell")``: the first element
    with that id (issue 21, item 3). An id written in HTML, one nbconvert makes from a heading, links to them."""
    html = page_html('<span id="test_softmax" class="score">2</span>\n\n# test_softmax\n\n'
                     '<a href="#test_softmax">위로</a> [아래](#written_1) <p id="user-content-x">p</p>')
    assert sorted(attributes(html, "id")) == ["user-content-test_softmax", "user-content-test_softmax",
                                              "user-content-x"], html
    assert sorted(h for h in attributes(html, "href")) == ["#user-content-test_softmax",
                                                          "#user-content-test_softmax", "#user-content-written_1"]
    again = markdown2html(sanitized(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(html)]))
                          .cells[0].source)   # feedback sanitises the autograded notebook once more
    assert sorted(attributes(again, "id")) == sorted(attributes(html, "id"))


def test_classes_are_only_those_rendering_makes():
    html = page_html('<div class="alert alert-success" role="alert">만점 (조교 확인)</div>\n\n'
                     '<div class="panel panel-primary nbgrader_cell"><span class="score full-credit">2</span></div>'
                     '\n\n## 소제목\n\n```python\ndef f(x):\n    return x ** 2\n```\n\n```mermaid\ngraph TD; A-->B\n```'
                     '\n\n```tex2jax\nx\n```\n\n- [x] 했음\n\n<span class="k tex2jax_process mathjax_process">k</span>')
    classes = {c for value in attributes(html, "class") for c in value.split()}
    assert {"highlight", "k", "nf", "anchor-link", "task-list-item", "language-tex2jax"} <= classes, classes
    assert classes <= sanitize.CLASSES | {"student-markdown", "language-tex2jax"}, classes
    assert "만점 (조교 확인)" in html and "graph TD" in html   # the text stays, only as text


@pytest.mark.parametrize("tex", [r"$\cssId{test_softmax}{x}$", r"$$\class{alert alert-success}{\text{만점}}$$",
                                 r"$\style{position:fixed}{x}$", r"$\data{grade=2}{x}$",
                                 r"$\mmlToken{mi}[id=test_softmax]{x}$", r"$\require{html}$",
                                 r"<span>\(&bsol;cssId{test_softmax}{x}\)</span>",
                                 r"<span>&bsol;(&bsol;cssId{test_softmax}{x}&bsol;)</span>",
                                 r"$\htmlId{test_softmax}{x}$", r"$\htmlClass{alert}{x}$",
                                 r"$\url{javascript:alert(1)}$", r"$\includegraphics{x.png}$"])
def test_math_renderers_get_no_macro_that_sets_attributes(tex):
    """MathJax (which the feedback and formgrader pages load) and KaTeX make ids, classes, styles and links from
    TeX."""
    html = page_html("식: " + tex)
    decoded = unescape(html)   # what the renderer reads: the page's text, character references decoded
    active_tex = (r"\\(cssId|class|style|data|mmlToken|require|href|url|htmlId|htmlClass|htmlStyle|htmlData|"
                  r"includegraphics)(?![A-Za-z])")
    assert not re.search(active_tex, decoded), decoded
    assert "\\mathrm{" in decoded, decoded   # shown as text


def test_html_outputs_get_the_same_treatment():
    code = nbformat.v4.new_code_cell("x")
    code.outputs = [nbformat.v4.new_output("display_data", data={
        "text/html": '<b id="test_softmax" class="alert">x</b><span>$&#92;cssId{test_softmax}{y}$</span>',
        "text/plain": "x"})]
    html = sanitized(nbformat.v4.new_notebook(cells=[code])).cells[0].outputs[0].data["text/html"]
    assert attributes(html, "id") == ["user-content-test_softmax"] and not attributes(html, "class"), html
    assert "cssId{" not in unescape(html).replace(r"\mathrm{cssId}{", ""), html


def test_outputs_and_raw_cells_are_inert():
    code = nbformat.v4.new_code_cell("x")
    code.outputs = [
        nbformat.v4.new_output("display_data", data={"text/html": HOSTILE[1] + "<b>표</b>", "text/plain": "표"}),
        nbformat.v4.new_output("display_data", data={"application/javascript": "document.title='x'",
                                                     "text/plain": "js"}),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": HOSTILE[6]}),
        nbformat.v4.new_output("display_data", data={"text/markdown": HOSTILE[2]}),
        nbformat.v4.new_output("stream", name="stdout", text="<script>stays text</script>"),
    ]
    code.outputs[0].metadata = {"text/html": {"isolated": True}}
    raw = nbformat.v4.new_raw_cell(HOSTILE[0])
    raw.metadata["format"] = "text/html"
    graded = nbformat.v4.new_markdown_cell("답")
    graded.metadata["nbgrader"] = {"grade_id": "x\"><script>alert(1)</script>", "solution": True}
    nb = sanitized(nbformat.v4.new_notebook(cells=[code, raw, graded]))
    html_out, js, svg, md, stream = nb.cells[0].outputs
    assert "<b>표</b>" in html_out.data["text/html"] and not active(html_out.data["text/html"])
    assert "text/html" not in html_out.metadata
    assert "application/javascript" not in js.data and "보안상" in js.data["text/plain"]
    assert "image/svg+xml" not in svg.data and "보안상" in svg.data["text/plain"]
    assert "text/markdown" not in md.data and not active(md.data["text/html"])
    assert stream.text == "<script>stays text</script>"   # streams are escaped by every template
    assert "format" not in nb.cells[1].metadata and "<script" not in nb.cells[1].source
    assert nb.cells[2].metadata.nbgrader["grade_id"] == "invalid-id"


def test_it_runs_when_registered_as_nbgrader_registers_it():
    """nbgrader calls ``exporter.register_preprocessor(cls)`` (not enabled): the preprocessor must still run."""
    from nbconvert.exporters import NotebookExporter

    exporter = NotebookExporter()
    exporter.register_preprocessor("autograder.feedback.sanitize.SanitizeStudentHTML")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(HOSTILE[0])])
    out, _ = exporter.from_notebook_node(nb)
    assert "<script>" not in out and "&lt;script&gt;" in out


def test_course_config_sanitises_autograded_notebooks_and_feedback(root):
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    name = "autograder.feedback.sanitize.SanitizeStudentHTML"
    steps = list(config.Autograde.autograde_preprocessors)
    assert steps[-1] == name and steps.index("nbgrader.preprocessors.SaveAutoGrades") < steps.index(name)
    assert name in config.GenerateFeedback.preprocessors
    assert config.SanitizeStudentHTML.record_dir   # made inert once: feedback does not render the notebook again
    assert config.HTMLExporter.sanitize_html is True


@pytest.mark.parametrize("link", [
    "[열기](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "<a href=\"data:image/svg+xml,<svg onload='alert(1)'/>\">그림</a>",
    "<a href=\" D&#65;TA:text/plain,x\">글</a>",
    "<a href=\"&#x64;ata:application/octet-stream;base64,AAAA\">파일</a>",
    "[그림 링크](data:image/png;base64,iVBORw0KGgo=)",
])
def test_no_link_to_a_data_url(link):
    """data: URLs are kept on pictures only: a link to one (a page, an SVG, a download of the student's bytes) loses
    its target; the link's text stays."""
    html = page_html("답: " + link)
    assert not [h for h in attributes(html, "href") if re.sub(r"[\s\x00-\x20]", "", unescape(h)).lower()
                .startswith("data:")], html
    assert "답" in html


def test_a_data_picture_stays():
    html = page_html("![점](data:image/png;base64,iVBORw0KGgo=)")
    assert attributes(html, "src") == ["data:image/png;base64,iVBORw0KGgo="], html


def test_a_table_in_a_list_item_or_a_quote_is_a_table():
    """The release's forbidden-routines table sits in a list item: rendered as a table in formgrader's view and the
    feedback (both show the sanitised notebook), as JupyterLab renders it, not as raw pipes."""
    html = page_html("- 쓸 수 없는 것:\n\n  | 문제 | 함수 |\n  |---|---|\n  | `softmax` | `torch.softmax` |\n\n"
                     "> | 질의 | 키 |\n> |---|---|\n> | 1 | 2 |\n")
    assert html.count("<table>") == 2 and "<td><code>torch.softmax</code></td>" in html and "|---|" not in html, html


def test_the_release_tables_are_tables(root):
    for assignment in ("attention", "kv_cache", "decoder"):
        nb = sanitized(nbformat.read(str(root / "release" / assignment / f"{assignment}.ipynb"), as_version=4))
        pages = [markdown2html(c.source) for c in nb.cells if c.cell_type == "markdown"]
        raw = [line for page in pages for line in page.split("&#10;") if re.search(r"\|\s*-{3,}\s*\|", line)]
        assert not raw, f"{assignment}: tables left as pipes: {raw[:3]}"


# ----------------------------------------------------------------------------------------------- bounded
def cell_html(nb, index=0) -> str:
    return unescape(nb.cells[index].source)


def test_a_cell_over_its_size_is_shown_as_text_with_the_reason():
    """A markdown cell past ``MAX_CELL_CHARS`` is not rendered: its text, escaped, under the Korean note."""
    from autograder.messages import Notice

    source = "<script>document.title='x'</script>**굵게** " + "x" * sanitize.MAX_CELL_CHARS
    nb = sanitized(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(source)]))
    html = nb.cells[0].source
    assert not active(markdown2html(html)) and "<strong>굵게</strong>" not in html
    assert Notice.MARKDOWN_TOO_BIG.found_in(cell_html(nb)) and "**굵게**" in cell_html(nb)


def test_nested_tags_are_shown_as_text_without_being_rendered(monkeypatch):
    """A cell whose tags nest past ``MAX_DEPTH`` (or are more than ``MAX_TAGS``) is measured before anything renders
    it: no child is asked to render it."""
    from autograder.messages import Notice

    asked = []
    monkeypatch.setattr(sanitize, "render_bounded", lambda pieces: asked.append(pieces) or [])
    deep = "<div>" * (sanitize.MAX_DEPTH + 1) + "x"
    closed_wrongly = "<div></span>" * (sanitize.MAX_DEPTH + 1)   # a close tag of another name closes nothing
    many = "<b>x</b>" * (sanitize.MAX_TAGS // 2 + 1)
    nb = sanitized(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(s) for s in (deep, closed_wrongly,
                                                                                              many)]))
    assert asked == []
    for index in range(3):
        assert Notice.MARKDOWN_TOO_DEEP.found_in(cell_html(nb, index)), cell_html(nb, index)[:300]
        assert not active(markdown2html(nb.cells[index].source))


def test_markdown_that_nests_once_rendered_is_shown_as_text():
    """Markdown whose HTML nests deeper than ``MAX_DEPTH`` only once rendered (lists in lists: no tag in its source)
    is measured again before it is cleaned."""
    from autograder.messages import Notice

    nb = sanitized(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("- " * 40 + "깊은 목록")]))
    assert Notice.MARKDOWN_TOO_DEEP.found_in(cell_html(nb)) and "깊은 목록" in cell_html(nb)


def test_the_notebooks_markdown_is_bounded_in_all():
    """Cells past ``MAX_CHARS`` of markdown in all are shown as text; the earlier ones are rendered."""
    from autograder.messages import Notice

    cells = [nbformat.v4.new_markdown_cell(f"**{i}** " + "가" * (sanitize.MAX_CELL_CHARS - 10)) for i in range(3)]
    nb = sanitized(nbformat.v4.new_notebook(cells=cells))
    assert "<strong>0</strong>" in nb.cells[0].source and "<strong>1</strong>" in nb.cells[1].source
    assert Notice.MARKDOWN_TOO_MUCH.found_in(cell_html(nb, 2)) and "<strong>2</strong>" not in nb.cells[2].source


def test_a_render_past_its_time_is_shown_as_text(monkeypatch):
    """The child that renders is stopped at ``RENDER_SECONDS``: what it did not render is shown as text."""
    from autograder.messages import Notice

    monkeypatch.setattr(sanitize, "RENDER_SECONDS", 0.05)
    monkeypatch.setattr(sanitize, "_render_all", lambda pieces: __import__("time").sleep(5))
    nb = sanitized(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("느린 *셀* 하나")]))
    assert Notice.MARKDOWN_NOT_RENDERED.found_in(cell_html(nb)) and "느린 *셀* 하나" in cell_html(nb)


def test_text_shown_as_text_is_bounded_in_all():
    """At most ``MAX_SHOWN`` characters of a notebook are shown as plain text; the rest is cut with a note."""
    from autograder.messages import Notice

    big = "<i>" + "뷁" * (sanitize.MAX_SHOWN + sanitize.MAX_CELL_CHARS)
    nb = sanitized(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(big) for _ in range(2)]))
    assert Notice.MARKDOWN_CUT.found_in(cell_html(nb, 0)) and Notice.MARKDOWN_CUT.found_in(cell_html(nb, 1))
    assert [c.source.count("뷁") for c in nb.cells] == [sanitize.MAX_SHOWN - 3, 0]


def test_a_notebook_made_inert_once_is_not_rendered_again(tmp_path, monkeypatch):
    """With ``record_dir`` (the course's setting) the autograded notebook, written and read back as nbgrader does,
    is passed as it is when feedback is made: nothing is rendered twice. A part changed afterwards is rendered."""
    monkeypatch.chdir(tmp_path)
    cells = [nbformat.v4.new_markdown_cell("# 제목\n\n" + HOSTILE[0]), nbformat.v4.new_raw_cell(HOSTILE[1])]
    code = nbformat.v4.new_code_cell("x")
    code.outputs = [nbformat.v4.new_output("display_data", data={"text/html": "<b>표</b>" + HOSTILE[1]})]
    step = SanitizeStudentHTML(record_dir=".autograder/inert")
    nb, _ = step.preprocess(nbformat.v4.new_notebook(cells=[*cells, code]), {})
    nbformat.write(nb, str(tmp_path / "autograded.ipynb"))
    again = nbformat.read(str(tmp_path / "autograded.ipynb"), as_version=4)
    monkeypatch.setattr(sanitize, "render_bounded", lambda pieces: pytest.fail(f"rendered again: {pieces}"))
    monkeypatch.setattr(sanitize, "_CACHE", sanitize.RenderCache())
    assert step.preprocess(again, {})[0] == nbformat.read(str(tmp_path / "autograded.ipynb"), as_version=4)
    again.cells[0].source += HOSTILE[0]   # not what autograde made inert: rendered (and made inert) again
    with pytest.raises(pytest.fail.Exception, match="rendered again"):
        step.preprocess(again, {})


def test_the_render_cache_is_bounded_by_its_size():
    cache = sanitize.RenderCache(limit=1600)
    for i in range(40):
        cache.put(f"source {i:3d}", "x" * 90)
    assert cache.size <= 1600 and cache.get("source  39") and not cache.get("source   0")
    cache.put("big", "x" * 200)   # over a sixteenth of the limit: not remembered
    assert cache.get("big") is None
