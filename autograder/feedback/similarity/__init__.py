"""Code similarity for the instructor: the class's submissions compared with each other, exercise by exercise,
and with the library sources that the forbidden-routine rules name (what no sandbox can stop: a copied notebook,
a library routine's source pasted into a cell).

The detector is copydetect's (PyPI ``copydetect``): each piece of code is tokenised (pygments), names, strings and
comments are filtered out (every variable becomes ``V``, so renaming changes nothing), and k-grams of the filtered
text are fingerprinted and winnowed as MOSS does (Schleimer, Wilkerson and Aiken, SIGMOD 2003). The similarity of
two pieces is the share of one's fingerprinted code that the other holds too (``copydetect.compare_files``). Two
changes around it: ``self.`` is dropped before tokenising (a method pasted as a function loses it), and k-grams are
hashed with a hash that is the same in every process (copydetect uses Python's salted ``hash``), so that a report
is reproducible.

What is compared (nothing is run: the notebooks are read as data, the code only tokenised):

* **units**: in each submission, every top-level ``def``/``class`` of a contract function (the assignment's
  exercises, wherever in the notebook it stands; the last definition wins, as when the cells run) is the unit of
  that exercise; every other top-level statement of the student's code cells is the unit ``OTHER`` (helpers,
  scratch code). Grade cells are not the student's code (``autograder.submission``);
* **template**: cells and top-level statements of the release notebook are left out, and the fingerprints of all
  its code (the provided helpers, the stubs with their signatures and docstrings, the visible checks) are removed
  from every unit, so code that every student was given matches nothing;
* **pairs**: two students' units of the same exercise, listed when at least ``pair_threshold`` of one's
  fingerprinted code is found in the other and at least ``min_match`` filtered characters match (a three-line
  softmax is written alike by everyone; only longer runs tell copying apart);
* **library**: every unit against the routines of each run-time label of the forbidden rules (``LIBRARY``: Keras's
  attention layers, ``keras.ops.dot_product_attention`` and its backends, torch's ``multi_head_attention_forward``
  and ``nn.MultiheadAttention``, the reference code in ``scaled_dot_product_attention``'s documentation, torch's
  softmax references and decompositions, scipy's softmax; torch's and Keras's normalisation functions, modules,
  layers and decompositions for the decoder's ``layer_norm``), read from the installed files (never imported),
  measured on the student's side against ``library_threshold``;
* **the course's own material**: every unit against the answer key (the source notebook) and the graders'
  catalogue of mistakes (which the demo class hands in). A unit that matches the answer key is listed under it; a
  pair whose both units match that material is counted, not listed: what they share is the course's code.

The thresholds are ``COURSE["similarity"]`` of ``course_config.py`` (with what they were measured on).

By job: ``units.py`` (a notebook's units, the template), ``fingerprints.py`` (copydetect's fingerprints made
reproducible, the comparison of two pieces, the marked HTML), ``routines.py`` (the library routines read from the
installed files); here, a class compared (``compare_class``, ``for_course``) and its report.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder import settings
from autograder.feedback.similarity.fingerprints import GUARANTEE, NOISE, Fingerprint, Piece, compare, fingerprint, \
    template_hashes
from autograder.feedback.similarity.routines import LIBRARY, Library, library, package_version
from autograder.feedback.similarity.units import OTHER, Template, units_of

__all__ = ["LIBRARY", "OTHER", "Options", "Report", "Template", "compare_class", "for_course", "library", "summary",
           "units_of"]

# A unit longer than this is compared on its first MAX_UNIT characters (a cell of pasted data could otherwise take
# minutes to tokenise; the longest unit of the demo class, a student's helpers, has under 3,000).
MAX_UNIT = 20_000


# ------------------------------------------------------------------------------------------------ a class
# The thresholds (``COURSE["similarity"]`` of ``course_config.py``, where each value's measurement is): a section of
# the course's settings (``settings.load().similarity``).
Options = settings.Similarity


@dataclass
class Report:
    """What the instructor's report shows for one assignment."""
    assignment: str
    students: int
    pairs: list             # Match("pair"): two students' units of one exercise
    library: list           # Match("library"): a student's unit and a library routine group
    answer_key: list        # Match("key"): a student's unit and the answer key's
    explained: int          # pairs not listed: both units match the course's own material (answer key, mistakes)
    sources: list
    missing: list
    seconds: float
    options: Options
    detector: str
    cut: list = field(default_factory=list)   # (student, exercise, length) of units compared on MAX_UNIT characters


def compare_class(assignment: str, submissions: dict, template_cells, exercises, answer_key=(), catalogue=(),
                  options: Options | None = None, lib: Library | None = None) -> Report:
    """The similarity report of one assignment.

    ``submissions``: ``{student: [code cell source, ...]}`` (the student's program, ``autograder.submission``);
    ``template_cells``: the release's code cells (ignored wherever they appear); ``answer_key``: the source
    notebook's code cells (a unit that matches its exercise's solution is listed under the answer key);
    ``catalogue``: ``[(name, code)]``, the graders' catalogue of mistakes (the demo class hands them in). A pair
    whose both units match the course's own material (the answer key or the catalogue) is counted, not listed:
    what they share is that material."""
    start = time.perf_counter()
    options = options or Options.from_course()
    boilerplate = template_hashes(template_cells)
    template = Template.of(template_cells)
    exercises = list(exercises)
    lib = lib if lib is not None else library()
    cache: dict[str, Fingerprint] = {}   # code -> fingerprint: identical units are tokenised once

    def piece(owner, ex, code):
        if code not in cache:
            cache[code] = fingerprint(code, boilerplate)
        return Piece(owner, ex, code, cache[code])

    def known(name, cells):
        return [piece(name, ex, code) for ex, code in units_of(cells, exercises, template).items() if ex != OTHER]

    key = {p.exercise: p for p in known("answer key", answer_key)}
    mistakes: dict[str, list[Piece]] = {}
    for name, code in catalogue:
        for p in known(name, [code]):
            mistakes.setdefault(p.exercise, []).append(p)
    pieces, cut = {}, []
    for student, cells in sorted(submissions.items()):
        pieces[student] = {}
        for ex, code in units_of(cells, exercises, template).items():
            if len(code) > MAX_UNIT:
                cut.append((student, ex, len(code)))
                code = code[:MAX_UNIT]
            pieces[student][ex] = piece(student, ex, code)

    def match(left, right, kind, threshold):
        return compare(left, right, kind, left.exercise, threshold, options.min_match)

    key_matches, from_material = [], set()
    for student, units in pieces.items():
        for ex, unit in units.items():
            on_key = match(unit, key[ex], "key", options.pair_threshold) if ex in key else None
            if on_key:
                key_matches.append(on_key)
            if on_key or any(match(unit, m, "key", options.pair_threshold) for m in mistakes.get(ex, ())):
                from_material.add((student, ex))
    pairs, explained = [], 0
    students = list(pieces)
    for ex in exercises + [OTHER]:
        have = [s for s in students if ex in pieces[s]]
        for i, a in enumerate(have):
            for b in have[i + 1:]:
                found = match(pieces[a][ex], pieces[b][ex], "pair", options.pair_threshold)
                if found and (a, ex) in from_material and (b, ex) in from_material:
                    explained += 1
                elif found:
                    pairs.append(found)
    library_matches = [found for units in pieces.values() for unit in units.values() for ref in lib.pieces
                       if (found := match(unit, ref, "library", options.library_threshold))]

    def order(m):
        return -m.similarity, m.exercise, m.left.owner, m.right.owner

    return Report(assignment, len(submissions), sorted(pairs, key=order), sorted(library_matches, key=order),
                  sorted(key_matches, key=order), explained, lib.sources, lib.missing,
                  time.perf_counter() - start, options,
                  f"copydetect {package_version('copydetect')} (k = {NOISE}, guarantee {GUARANTEE})", cut)


def _code_cells(nb) -> list[str]:
    return [c.source if isinstance(c.source, str) else "".join(c.source) for c in nb.cells if c.cell_type == "code"]


def for_course(course_dir, assignments, options: Options | None = None) -> dict[str, Report]:
    """The report of each coded assignment (``graders.registry.coded_assignments``: the quiz's answers are not code)
    of a course directory: the autograded notebooks (``autograded/<student>/<assignment>/``, the pipeline's own
    copies, read as data like every submission: ``autograder.submission``), the release as template, the answer key
    (``source/``) and the graders' catalogue of mistakes as the course's own material."""
    import nbformat

    from autograder.graders import registry
    from autograder.submission.files import NotGradable
    from autograder.submission.notebook import collect, read_notebook

    course_dir = Path(course_dir)
    options = options or Options.from_course()
    reports = {}
    for assignment in assignments:
        release = sorted((course_dir / "release" / assignment).glob("*.ipynb"))
        if assignment not in registry.coded_assignments() or not release:
            continue
        template = [c for path in release for c in _code_cells(nbformat.read(str(path), as_version=4))]
        key = [c for path in sorted((course_dir / "source" / assignment).glob("*.ipynb"))
               for c in _code_cells(nbformat.read(str(path), as_version=4))]
        catalogue = [(f"mistake {m.id}", m.source) for m in registry.mistakes_of(assignment)]
        submissions = {}
        for folder in sorted((course_dir / "autograded").glob(f"*/{assignment}")):
            cells = []
            for path in release:
                try:
                    cells += collect(read_notebook(folder / path.name), str(path), assignment).code_cells
                except NotGradable:   # missing or refused: nothing of it is compared
                    continue
            submissions[folder.parent.name] = cells
        reports[assignment] = compare_class(assignment, submissions, template, registry.exercises_of(assignment),
                                            key, catalogue, options)
    return reports


def summary(report: Report) -> str:
    """One line for a terminal: the pairs and library matches of a report."""
    pairs = sorted({f"{m.left.owner}-{m.right.owner}" for m in report.pairs})
    library = sorted({f"{m.left.owner}-{m.right.owner}" for m in report.library})
    return (f"{len(pairs)} student pair(s) [{', '.join(pairs)}], {len(library)} library match(es) "
            f"[{', '.join(library)}], {len({m.left.owner for m in report.answer_key})} student(s) with answer-key "
            f"code, {report.students} submissions in {report.seconds:.1f} s")
