"""The instructor's workflow end to end: the demo class through nbgrader's exchange, on SQLite and PostgreSQL,
re-runs, late penalties, exports, and two shards graded concurrently into one gradebook (the PostgreSQL class is
graded so: ``ShardedDemo``)."""
import csv
import os
import subprocess
import sys
import uuid

import nbformat
import pytest

from autograder.demo import roster
from autograder.demo.classroom import DemoClass
from tests.helpers.postgres import postgres_server
from tests.gradebook.test_preprocessors import formgrader_view

pytestmark = pytest.mark.slow

# A cross-section of the class: solutions, another implementation handed in late, a catalogue mistake, a partial
# answer, an empty notebook, a truncated file, a cheating attempt, a renamed copy of the late implementation and
# malformed quiz answers.
IDS = ["2026001", "2026004", "2026006", "2026021", "2026025", "2026027", "2026028", "2026029"]
STUDENTS = [s for s in roster.ROSTER if s.id in IDS]
# The PostgreSQL gradebook gets half of them (the solutions, the late one, a mistake, the truncated file): two in
# each of the two shards, enough to show the same scores and no doubled rows at half the grading time.
PG_IDS = ["2026001", "2026004", "2026006", "2026027"]
PG_STUDENTS = [s for s in STUDENTS if s.id in PG_IDS]
SEED = "424242"


def scores(data, assignment):
    return {r["id"]: (r["assignments"][assignment]["score"], r["assignments"][assignment]["exercises"])
            for r in data["students"] if assignment in r["assignments"]}


def counts(db_url):
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gb:
        subs = [s for a in gb.assignments for s in gb.assignment_submissions(a.name)]
        return len(gb.students), len(subs), sum(len(list(n.grades)) for s in subs for n in s.notebooks)


@pytest.fixture(scope="module", autouse=True)
def fixed_seed():
    old = os.environ.get("AUTOGRADER_SEED")
    os.environ["AUTOGRADER_SEED"] = SEED
    yield
    if old is None:
        os.environ.pop("AUTOGRADER_SEED")
    else:
        os.environ["AUTOGRADER_SEED"] = old


@pytest.fixture(scope="module")
def sqlite_class(tmp_path_factory):
    demo = DemoClass(tmp_path_factory.mktemp("sqlite") / "course", ["attention", "quiz"], students=STUDENTS,
                     workers=2)
    return demo, demo.run()


def test_class_is_graded_with_penalties_and_exports(sqlite_class, root):
    demo, data = sqlite_class
    attention, quiz = scores(data, "attention"), scores(data, "quiz")
    assert set(attention) == set(quiz) == set(IDS)
    assert attention["2026001"][0] == 27                            # the solutions
    assert attention["2026004"][0] == pytest.approx(24.3)           # correct, one day late: -10 %
    assert attention["2026025"][0] == attention["2026027"][0] == 0  # empty, truncated
    assert attention["2026028"][1]["scaled_dot_product_attention"] == 0  # the cheat fakes nothing
    assert attention["2026028"][1]["softmax"] == 2
    assert 0 < attention["2026021"][0] < 27 and 0 < attention["2026006"][0] < 27
    assert quiz["2026001"][0] == 19 and quiz["2026029"][0] < 19    # written answers still to be graded by hand
    rows = list(csv.reader(open(demo.dir / "reports" / "grades.csv", encoding="utf-8")))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "attention", "quiz"] \
        and rows[1][0] == "Points Possible"
    assert len(rows) == 2 + len(IDS)
    grades = {row[2]: row[5:] for row in rows[2:]}                  # by student number; the quiz waits for a person
    assert grades["2026001"] == ["27", ""] and grades["2026004"] == ["24.3", ""]
    report = (demo.dir / "reports" / "report.html").read_text(encoding="utf-8")
    assert "class='hist'" in report and "가장 자주 진단된 실수" in report
    # the similarity report (tests/feedback/test_similarity.py measures it on the whole class): 2026029 copied 2026004's
    # notebook, renamed; their code side by side, escaped, the matched parts marked
    assert "<h4>비슷한 학생 쌍 (1)</h4>" in report and "2026004 최하은</b> ↔ <b>2026029 유승우</b>" in report
    assert "def apply_rope(x, positions, base=10000.0):" in report and "<mark>" in report
    assert "theta = ops.cast(ops.convert_to_tensor(positions), x.dtype)[:, None]" in report
    assert "<h4>라이브러리 코드와 비슷한 제출 (0)</h4>" in report
    assert (demo.dir / "grades_nbgrader.csv").exists()
    # the cheat reached for the grader's frame: flagged wherever grades are read (not the LMS's file), the others not
    section = report[report.index("<h3 id='review-attention'>"):report.index("<h3 id='review-quiz'>")]
    assert "검토할 제출물 (1명)" in section
    assert f"2026028 허예린: {attention['2026028'][0]:g} / 27점, 검토 1건" in section, section
    assert "`_getframe` — 호출 스택의 프레임을 읽습니다" in section
    from autograder.gradebook.preprocessors.record_review import review_of

    autograded = {s: nbformat.read(str(demo.dir / "autograded" / s / "attention" / "attention.ipynb"), as_version=4)
                  for s in IDS if s != "2026027"}   # the truncated file is graded as the blank release
    assert {s for s, nb in autograded.items() if review_of(nb)} == {"2026028"}
    page = formgrader_view(root, autograded["2026028"])   # formgrader's manual-grading view of it
    assert 'id="course-review"' in page and "`_getframe` — 호출 스택의 프레임을 읽습니다" in page
    for student in IDS:   # every student fetched their own feedback through the exchange, and no one else's
        pages = list((demo.dir / "home" / student / "attention" / "feedback").rglob("attention.html"))
        assert len(pages) == 1 and pages[0].read_bytes() == \
            (demo.dir / "feedback" / student / "attention" / "attention.html").read_bytes(), student
        assert (demo.dir / "home" / student / ".local/share/jupyter/nbgrader_cache").is_dir(), student
    # the regrade request 2026006 filed through the exchange, beside the grade it is about
    requests = report[report.index("<h2 id='regrades'>"):]
    assert "재채점 요청 (1건, 학생 1명)" in requests and "scaled_dot_product_attention" in requests


def test_the_workers_feedback_is_what_nbgrader_generate_feedback_makes(sqlite_class):
    """The demo's class run makes the feedback with its grading workers (``autograde_class(feedback=True)``): every
    page is byte for byte the page that ``nbgrader generate_feedback --force`` makes of the same gradebook."""
    from autograder import course

    demo, _ = sqlite_class
    pages = sorted((demo.dir / "feedback").glob("*/attention/attention.html"))
    assert len(pages) == len(IDS)
    made = {page: page.read_bytes() for page in pages}
    course.nbgrader("generate_feedback", "attention", "--force", cwd=demo.dir, env=demo.env)
    differ = [page.parent.parent.name for page in pages if page.read_bytes() != made[page]]
    assert not differ, f"feedback pages that differ from nbgrader generate_feedback's: {differ}"


def test_a_feedback_page_is_what_htmlexporters_own_step_makes(sqlite_class, monkeypatch):
    """``FeedbackExporter`` writes HTMLExporter's last step again without its BeautifulSoup pass (the patch table's
    ``FEEDBACK_RESOURCES``): a page with pictures (the answer key's heatmaps), parsed, is the page HTMLExporter's
    own step makes, every picture with nbconvert's alternative text."""
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter

    from autograder.feedback import html

    demo, _ = sqlite_class
    page = demo.dir / "feedback" / "2026001" / "attention" / "attention.html"
    ours = page.read_text(encoding="utf-8")
    pictures = ours.count('<img src="data:image/png')
    assert pictures >= 3 and ours.count(f'alt="{html.NO_ALT}"') == pictures

    def htmlexporters(self, nb, resources=None, **kw):   # the page's resources, then HTMLExporter's own
        return HTMLExporter.from_notebook_node(self, nb, html.with_page_resources(resources), **kw)

    monkeypatch.setattr(html.FeedbackExporter, "from_notebook_node", htmlexporters)
    assert demo.api().generate_feedback("attention", "2026001", force=True)["success"]
    theirs = page.read_text(encoding="utf-8")
    page.write_text(ours, encoding="utf-8")             # the course as the class run left it, for the tests after
    assert theirs != ours and str(BeautifulSoup(ours, features="html.parser")) == theirs


def test_alt_text_is_added_where_a_parser_sees_an_img_without_alt():
    """What BeautifulSoup's ``img:not([alt])`` selects gets the text, last: not a tag in a script, style or comment,
    not an ``alt`` with or without a value; a ``>`` inside a quoted value does not end the tag."""
    from bs4 import BeautifulSoup

    from autograder.feedback.html import NO_ALT, alt_text

    page = ('<p><img src="a.png"><img src="b.png" alt="b"/><img alt src="c.png">'
            '<img src="d.png" title="x>y onerror=alert(1)"><IMG SRC="e.png"\n/></p><!-- <img src=f> -->'
            '<style>p::after { content: "<img src=g>"; }</style><script>x = "<img src=h>";</script>')
    made, count = alt_text(page)
    expected = (page.replace('<img src="a.png">', f'<img src="a.png" alt="{NO_ALT}">')
                .replace('onerror=alert(1)">', f'onerror=alert(1)" alt="{NO_ALT}">')
                .replace('"e.png"\n/>', f'"e.png" alt="{NO_ALT}"\n/>'))
    assert count == 3 and made == expected
    soup = BeautifulSoup(made, features="html.parser")
    assert soup.select("img:not([alt])") == [] and len(soup.select("img")) == 5
    assert [img["alt"] for img in soup.select("img")] == [NO_ALT, "b", "", NO_ALT, NO_ALT]
    assert soup.select("img")[3]["title"] == "x>y onerror=alert(1)"


def test_report_command_writes_the_reports_of_a_graded_course(sqlite_class, capsys):
    """``python -m autograder report`` (an instructor's course, not the demo): the same reports from the gradebook
    and the autograded notebooks, without grading again."""
    from autograder import cli

    demo, data = sqlite_class
    report = demo.dir / "reports" / "report.html"
    report.unlink()
    assert cli.main(["report", "--course-dir", str(demo.dir), "attention", "quiz"]) == 0
    out = capsys.readouterr().out
    assert "similarity attention: 1 student pair(s) [2026004-2026029], 0 library match(es)" in out, out
    assert "2026004 최하은</b> ↔ <b>2026029 유승우</b>" in report.read_text(encoding="utf-8")


def submitted_at(db_url, assignment):
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gb:
        return {s.student.id: s.timestamp for s in gb.assignment_submissions(assignment)}


# The re-run's students: the late one (a penalty applied again to a re-graded submission would lower its 24.3) and
# the truncated file (staged and graded as the blank release again): one each for the two workers.
RERUN_IDS = ["2026004", "2026027"]


def test_rerun_is_idempotent(sqlite_class):
    """The demo run again on its course folder: the re-run students hand in, are collected and graded again, and the
    gradebook keeps one student, one submission and one set of grades each; every score stays what it was."""
    demo, data = sqlite_class
    db = demo.env["COURSE_DB_URL"]
    before, handed_in = counts(db), submitted_at(db, "attention")
    again = DemoClass(demo.dir, ["attention"], students=[s for s in STUDENTS if s.id in RERUN_IDS], workers=2).run()
    assert counts(db) == before
    assert scores(again, "attention") == scores(data, "attention")
    now = submitted_at(db, "attention")
    assert {s for s in IDS if now[s] != handed_in[s]} == set(RERUN_IDS), (handed_in, now)   # what was re-run


@pytest.fixture(scope="module")
def postgres_db():
    """A PostgreSQL server of this module's own, stopped at the end (tests/helpers/postgres.py)."""
    import psycopg2

    with postgres_server() as (url, _):
        name = f"demo_{uuid.uuid4().hex[:8]}"
        conn = psycopg2.connect(url.replace("+psycopg2", ""))
        conn.autocommit = True
        conn.cursor().execute(f"CREATE DATABASE {name}")
        conn.close()
        yield url.rsplit("/", 1)[0] + "/" + name


class ShardedDemo(DemoClass):
    """The demo class whose collected submissions are graded by two ``python -m autograder autograde --shard i/2
    --feedback`` processes at once (what a cluster's indexed Job runs, one pod a shard) instead of the demo's one
    class run; everything before and after (release, hand in, collect, feedback released and fetched, exports) is
    the demo's. Each shard's exit code and output are kept (``shards``)."""

    shards: tuple = ()

    def autograde(self, assignment: str) -> list:
        env = {**os.environ, **self.env, "AUTOGRADER_SEED": SEED}
        running = [subprocess.Popen([sys.executable, "-m", "autograder", "autograde", assignment, "--workers", "1",
                                     "--shard", f"{i}/2", "--feedback", "--course-dir", str(self.dir)], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in (1, 2)]
        self.shards = [(p.communicate(timeout=900)[0], p.returncode) for p in running]
        return []


@pytest.fixture(scope="module")
def postgres_class(tmp_path_factory, postgres_db):
    demo = ShardedDemo(tmp_path_factory.mktemp("pg") / "course", ["attention"], db_url=postgres_db,
                       students=PG_STUDENTS)
    return demo, demo.run()


def test_postgres_gives_the_sqlite_scores(sqlite_class, postgres_class):
    on_sqlite = scores(sqlite_class[1], "attention")
    assert scores(postgres_class[1], "attention") == {i: on_sqlite[i] for i in PG_IDS}


def test_two_shards_at_once_into_one_gradebook(postgres_class, postgres_db):
    """The PostgreSQL class was graded by two shards at once: each graded its half and made its feedback, no student
    or submission is doubled, and every student fetched the page of their own grading."""
    demo, data = postgres_class
    outputs = [out for out, _ in demo.shards]
    assert [code for _, code in demo.shards] == [0, 0], outputs
    assert all("== attention: 2 of 2 submission(s) graded" in out and "\nnext: " in out for out in outputs), outputs
    graded = [int(out.split("/")[0].rsplit(" ", 1)[-1]) for out in outputs
              for out in [line for line in out.splitlines() if " graded in " in line]]
    assert sum(graded) == len(PG_IDS) and all(graded), outputs      # every student in exactly one shard
    assert counts(postgres_db)[:2] == (len(PG_IDS), len(PG_IDS))        # no student or submission doubled
    assert set(scores(data, "attention")) == set(PG_IDS)
    for student in PG_IDS:
        pages = list((demo.dir / "home" / student / "attention" / "feedback").rglob("attention.html"))
        assert len(pages) == 1 and pages[0].read_bytes() == \
            (demo.dir / "feedback" / student / "attention" / "attention.html").read_bytes(), student
