"""The course's exercises, one record each, and every list built from them; it fails closed.

An exercise is three things (docs/authors/adding-an-exercise.md): its grader
``graders/<assignment>/test_<exercise>.py``, its record ``graders/exercises/<exercise>.py``
(``EXERCISE = Exercise(...)``: assignment, points, forbidden rule, mistakes, callees, answer) and its notebook
cells. Everything else is read from the records here: the exercises and points of an assignment, the
forbidden-routine rule of a function (``record``), the catalogue of mistakes (``catalogue``, ``mistakes_of``,
``diagnosable_mistakes``), the proxies' table (``isolation.py``).

The catalogue of realistic mistakes (mutants): each mistake is the source of a student-style function with one known
error, defined as a student might write it in the solution cell (numpy, calling the other contract functions and the
notebook's helpers where a student would). The same source serves twice: the package's tests put it into a notebook
in place of the solution and check that the exercise loses points and, for the diagnosable ones, that the feedback
names it; the graders run it on the failing case's inputs to name the mistake in the feedback (``diagnosis.py``).
Inside the graders a mistake's function runs with the float64 reference functions of ``references.py`` as its
helpers (``softmax``, ``scaled_dot_product_attention``, ...), in the trusted process: it is our code.

Importing this module reads every record and stops with ``RegistryError`` when they do not fit the graders: a
grader without a record, a record without a grader or in another assignment's folder, a mistake of another
exercise, a callee without an answer, a ladder that climbs back. A name without a record has no rule to be graded
by, so ``record`` refuses it instead of grading without one. An assignment whose answers are not code (the quiz:
its folder holds ``answer_key.py``, one ``Question`` record per question, ``questions.py``) has graders and no
exercise records; its questions are read here too, and a question that is not well formed, a gap in the numbering
or a name given twice stops the registry the same way; ``question`` refuses a name without a record.

Each grader of code declares at its top what it compares with, as data the registry reads (``declared``, from the
file's source: no grader is imported here): ``REFERENCES``, the references in words, and ``TOLERANCES``, ``{name in
tolerances.py: when it applies}`` (``against_gpu`` where it compares with stored GPU cases, ``GPU_CASES``). A grader
without them, or naming a tolerance that ``tolerances.py`` does not define, stops the registry.
"""
from __future__ import annotations

import ast
import importlib
import pkgutil
from functools import cache
from pathlib import Path

from autograder.graders import exercises, tolerances
from autograder.graders.exercises import Exercise, Mistake
from autograder.graders.forbidden import Rule
from autograder.graders.questions import Question, QuestionError, Written

GRADERS = Path(__file__).parent
RECORDS_DIR = GRADERS / "exercises"
KEY = "answer_key.py"   # in an assignment's grader folder: its answers are not code (the quiz)


class RegistryError(RuntimeError):
    """The exercise records and the graders do not fit: grading stops instead of grading without a rule."""


def exercises_of(assignment: str) -> list[str]:
    """Names of the graded exercises of an assignment, from its grader modules (``test_<exercise>.py``)."""
    folder = GRADERS / assignment
    return sorted(p.stem[len("test_"):] for p in folder.glob("test_*.py"))


def record(name: str, assignment: str | None = None) -> Exercise:
    """The record of the exercise ``name``: the one of ``assignment`` where two assignments each have an exercise of
    that name (``generate``: ``decoder``'s and ``modern``'s), else the only one; ``RegistryError`` for a name without
    one, or a shared name asked without an assignment that has it (fail closed)."""
    found = BY_NAME.get(name, [])
    if len(found) > 1:
        found = [r for r in found if r.assignment == assignment]
    if len(found) == 1:
        return found[0]
    if not found and name not in BY_NAME:
        raise RegistryError(f"`{name}` has no exercise record ({RECORDS_DIR / name}.py): a grader may call only "
                            "the exercises of the registry")
    raise RegistryError(f"`{name}` is an exercise of {', '.join(r.assignment for r in BY_NAME[name])}: its record "
                        f"is asked for with its assignment, not {assignment!r}")


def of_assignment(assignment: str) -> list[Exercise]:
    """The records of an assignment's exercises, by name (none for the quiz)."""
    return [r for r in RECORDS.values() if r.assignment == assignment]


def mistakes_of(assignment: str) -> list[Mistake]:
    """The mistakes of an assignment's exercises (``of_assignment``'s order, each exercise's in its own)."""
    return [m for exercise in of_assignment(assignment) for m in exercise.mistakes]


@cache
def catalogue() -> tuple[Mistake, ...]:
    """Every mistake of every exercise."""
    return tuple(m for exercise in RECORDS.values() for m in exercise.mistakes)


def diagnosable_mistakes(exercise: str, assignment: str | None = None) -> list[Mistake]:
    """The mistakes of ``exercise`` (``record(exercise, assignment)``'s) that the diagnosis can name
    (``diagnosis.py``)."""
    return [m for m in record(exercise, assignment).mistakes if m.diagnosable]


def question(name: str) -> Question:
    """The record of the quiz question ``name``; ``RegistryError`` for a name without one (fail closed)."""
    try:
        return QUESTIONS[name]
    except KeyError:
        raise RegistryError(f"quiz question `{name}` has no record in an answer key ({GRADERS}/<assignment>/"
                            f"{KEY}): a grader may grade only the questions of the registry") from None


def questions_of(assignment: str) -> list[Question]:
    """The records of an assignment's questions, in order (none for an assignment whose answers are code)."""
    return list(KEYS.get(assignment, ()))


def coded_assignments() -> list[str]:
    """The assignments whose exercises are code (those with records), sorted."""
    return sorted({r.assignment for r in RECORDS.values()})


# What an assignment's catalogue of mistakes holds at least (tests/graders/test_<assignment>_graders.py prove every
# mistake loses points and is named; tests/graders/test_registry.py checks these minimums): mistakes of each exercise
# (one where an assignment is not listed), in all, and by id the mistakes the course's issues named.
MISTAKES_PER_EXERCISE = {"attention": 1, "kv_cache": 2, "decoder": 4, "modern": 4}
MISTAKES_IN_ALL = {"attention": 20}
REQUIRED_MISTAKES = {
    "kv_cache": frozenset({
        "kv_bytes_missing_factor_2", "kv_bytes_bits_not_bytes", "kv_bytes_ignores_batch", "kv_bytes_query_heads",
        "kv_bytes_float_result", "max_tokens_excludes_exact_fit", "max_tokens_float_division", "gqa_tiled_heads",
        "kvcache_wrong_axis", "attend_top_left_mask", "flash_sum_not_rescaled", "flash_materializes_scores",
        "flash_causal_top_left", "flash_full_causal_mask", "sw_window_off_by_one", "sw_top_left",
        "rope_positions_restart", "rope_rerotates_cached_keys", "rope_caches_unrotated_keys", "rope_freq_i_over_d",
        "rope_interleaved_pairs"}),
    "decoder": frozenset({
        "block_post_norm", "block_residual_twice", "block_no_causal_mask", "gen_positions_restart",
        "gen_attends_before_append", "ln_unbiased_variance", "ln_eps_outside_sqrt", "gen_logits_without_ln_f",
        "block_tanh_gelu", "gen_positions_off_by_one", "gen_samples", "ln_keras_default_eps", "gen_ignores_cache",
        "gen_cache_per_step", "ntp_temperature_after_softmax", "ntp_top_p_drops_crossing", "ntp_top_k_breaks_ties",
        "ntp_no_renormalise", "ntp_temperature_multiplied", "ntp_no_greedy_branch", "ntp_greedy_last_argmax",
        "ntp_top_k_one_too_many", "ntp_top_k_drops_kth", "ntp_top_p_in_token_order", "ntp_top_p_ascending",
        "ntp_top_p_not_unsorted", "ntp_top_p_on_logits", "ntp_top_p_keeps_ties", "ntp_top_p_on_whole_distribution",
        "gen_sampling_ignores_filters", "gen_temperature_twice", "gen_argmax_when_sampling", "gen_ignores_rng",
        "gen_always_samples", "gen_float_tokens"}),
    "modern": frozenset({
        "q3_attn_rope_interleaved", "q3_attn_no_qk_norm", "q3_attn_qk_norm_whole_projection", "q3_attn_kv_heads_tiled",
        "q3_attn_caches_repeated_heads", "q3_rms_mean_subtracted", "q3_swiglu_gate_up_swapped",
        "q3_gen_positions_restart", "q3_bytes_query_heads"}),
}


def short_catalogue(assignment: str) -> list[str]:
    """What ``assignment``'s catalogue lacks of its minimums (``MISTAKES_PER_EXERCISE``, ``MISTAKES_IN_ALL``,
    ``REQUIRED_MISTAKES``), one line each; empty when it holds them.

    Example:
        >>> short_catalogue("decoder")
        []
    """
    mistakes = mistakes_of(assignment)
    least = MISTAKES_PER_EXERCISE.get(assignment, 1)
    lacking = [f"{e.name}: {len(e.mistakes)} mistake(s), at least {least}" for e in of_assignment(assignment)
               if len(e.mistakes) < least]
    if len(mistakes) < MISTAKES_IN_ALL.get(assignment, 0):
        lacking.append(f"{len(mistakes)} mistakes in all, at least {MISTAKES_IN_ALL[assignment]}")
    missing = sorted(REQUIRED_MISTAKES.get(assignment, frozenset()) - {m.id for m in mistakes})
    return lacking + ([f"required mistakes missing: {', '.join(missing)}"] if missing else [])


def _graded() -> dict[str, Path]:
    """``{record key: grader file}`` of every assignment whose answers are code: the key is the exercise's name, or
    ``<assignment>_<name>`` where that record exists (``key``: an exercise whose name another assignment's has)."""
    graded = {}
    for path in sorted(GRADERS.glob("*/test_*.py")):
        if not (path.parent / KEY).exists():
            name = path.stem[len("test_"):]
            shared = (RECORDS_DIR / f"{key(path.parent.name, name, True)}.py").exists()
            graded[key(path.parent.name, name, shared)] = path
    return graded


def key(assignment: str, name: str, shared: bool) -> str:
    """The module name of an exercise's record (``exercises/<key>.py``): its name, or ``<assignment>_<name>`` for a
    name that an exercise of another assignment has already (``modern_generate``: ``decoder`` has a ``generate``)."""
    return f"{assignment}_{name}" if shared else name


def _records() -> dict[str, Exercise]:
    records = {}
    for info in sorted(pkgutil.iter_modules(exercises.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{exercises.__name__}.{info.name}")
        found = getattr(module, "EXERCISE", None)
        if not isinstance(found, Exercise) or info.name not in (found.name, key(found.assignment, found.name, True)):
            raise RegistryError(f"{RECORDS_DIR / info.name}.py: it must end with EXERCISE = Exercise({info.name!r}, "
                                "assignment=..., points=..., forbidden=..., mistakes=...) (or be named "
                                "<assignment>_<name>.py for a name another assignment's exercise has too)")
        records[info.name] = found
    return records


def _keys() -> dict[str, tuple]:
    """``{assignment: its key's QUESTIONS}`` of every assignment whose grader folder holds an answer key."""
    keys = {}
    for path in sorted(GRADERS.glob(f"*/{KEY}")):
        try:
            module = importlib.import_module(f"{__package__}.{path.parent.name}.{path.stem}")
        except QuestionError as exc:
            raise RegistryError(f"{path}: {exc}") from None
        keys[path.parent.name] = getattr(module, "QUESTIONS", None)
        check_key(path, keys[path.parent.name], getattr(module, "WRITTEN", None))
    return keys


def check_key(where: Path, questions, written) -> None:
    """``RegistryError`` unless ``questions`` (an answer key's ``QUESTIONS``) are ``Question`` records named q1, q2,
    ... without a gap or a name given twice, and ``written`` (its ``WRITTEN``) is ``{name: Written}``."""
    if not isinstance(questions, tuple) or not all(isinstance(q, Question) for q in questions):
        raise RegistryError(f"{where}: QUESTIONS must be a tuple of Question records (questions.py), not "
                            f"{questions!r:.80}")
    names = [q.name for q in questions]
    for name in names:
        if names.count(name) > 1:
            raise RegistryError(f"{where}: quiz question {name!r} is given twice")
    numbers = [int(name[1:]) for name in names]
    for number in range(1, max(numbers, default=0) + 1):
        if number not in numbers:
            raise RegistryError(f"{where}: quiz question 'q{number}' is missing (the questions are q1 to "
                                f"q{max(numbers)}, one per variable of the notebook)")
    if numbers != sorted(numbers):
        raise RegistryError(f"{where}: the quiz questions are out of order: {', '.join(names)}")
    if not isinstance(written, dict) or not all(isinstance(w, Written) and w.name == n for n, w in written.items()):
        raise RegistryError(f"{where}: WRITTEN must be {{name: Written(name, ...)}} (questions.py), not "
                            f"{written!r:.80}")
    if set(written) & set(names):
        raise RegistryError(f"{where}: {sorted(set(written) & set(names))} is both a question and a written answer")


DECLARED = ("REFERENCES", "TOLERANCES", "GPU_CASES")   # what a grader of code declares at its top, as literals


def declared(grader: Path) -> dict:
    """``{name: value}`` of the ``DECLARED`` names that ``grader``'s source assigns at its top level (literals only);
    ``RegistryError`` for one that is not a literal."""
    found = {}
    for node in ast.parse(grader.read_text(encoding="utf-8"), str(grader)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in DECLARED:
                try:
                    found[name] = ast.literal_eval(node.value)
                except ValueError:
                    raise RegistryError(f"{grader}: {name} must be a literal (the registry reads it without "
                                        "importing the grader)") from None
    return found


def check_graders(graded: dict[str, Path]) -> None:
    """``RegistryError`` unless every grader declares its ``REFERENCES`` (a tuple of descriptions) and its
    ``TOLERANCES`` (``{name in tolerances.py: when it applies}``, with ``against_gpu`` where it has ``GPU_CASES``)."""
    for name, grader in sorted(graded.items()):
        found = declared(grader)
        references, tolerance = found.get("REFERENCES"), found.get("TOLERANCES")
        if not (isinstance(references, tuple) and references
                and all(isinstance(r, str) and r.strip() for r in references)):
            raise RegistryError(f"{grader}: it must declare at its top REFERENCES = (\"...\", ...), what {name} is "
                                "compared with, in words (docs/authors/adding-an-exercise.md, step 3)")
        if not (isinstance(tolerance, dict) and tolerance
                and all(isinstance(t, str) and isinstance(w, str) and w.strip() for t, w in tolerance.items())):
            raise RegistryError(f"{grader}: it must declare at its top TOLERANCES = {{\"NAME\": \"when it applies\"}}, "
                                f"the tolerances of tolerances.py that {name} is compared with "
                                "(docs/authors/adding-an-exercise.md, step 3)")
        unknown = sorted(t for t in tolerance if t.startswith("_") or not hasattr(tolerances, t))
        if unknown:
            raise RegistryError(f"{grader}: TOLERANCES names {', '.join(unknown)}, which tolerances.py does not define")
        if "GPU_CASES" in found and "against_gpu" not in tolerance:
            raise RegistryError(f"{grader}: it compares with stored GPU cases (GPU_CASES) but its TOLERANCES do not "
                                "name against_gpu")


def check(records: dict[str, Exercise], graded: dict[str, Path]) -> None:
    """``RegistryError`` unless every grader has its record and every record its grader, in its assignment's folder,
    with its own mistakes and a ladder of callees that have answers."""
    for name in sorted(set(graded) - set(records)):
        raise RegistryError(f"{graded[name]} has no exercise record: write {RECORDS_DIR / name}.py ending with "
                            f"EXERCISE = Exercise({name!r}, assignment=..., points=..., forbidden=..., mistakes=...) "
                            "(docs/authors/adding-an-exercise.md, step 4)")
    for name in sorted(set(records) - set(graded)):
        raise RegistryError(f"{RECORDS_DIR / name}.py is the record of an exercise without a grader: write "
                            f"{GRADERS / records[name].assignment / f'test_{name}.py'} "
                            "(docs/authors/adding-an-exercise.md, step 3)")
    ids = {}   # assignment -> its mistakes' ids (an id names one mistake of an assignment)
    answered = {}   # name -> the key of the record that answers it (a proxy is asked for by name only)
    for name, r in records.items():
        if r.answer is not None and answered.setdefault(r.name, name) != name:
            raise RegistryError(f"{RECORDS_DIR / name}.py: {r.name!r} is answered by {answered[r.name]}.py already "
                                "(a proxy's answer is asked for by the function's name: one record of a name has one)")
    for name, r in records.items():
        where = f"{RECORDS_DIR / name}.py"
        if graded[name].parent.name != r.assignment:
            raise RegistryError(f"{where}: assignment {r.assignment!r}, but its grader is {graded[name]}")
        if not r.points > 0:
            raise RegistryError(f"{where}: points must be positive (its grade cell's points)")
        if r.forbidden is not None and not isinstance(r.forbidden, Rule):
            raise RegistryError(f"{where}: forbidden must be a Rule of forbidden.py or None, not {r.forbidden!r}")
        for m in r.mistakes:
            if m.exercise != r.name or m.id in ids.setdefault(r.assignment, set()):
                raise RegistryError(f"{where}: mistake {m.id!r} is of {m.exercise!r} or not the only one of its id "
                                    f"in {r.assignment}")
            ids[r.assignment].add(m.id)
        for other in r.callees + r.implied:
            if other not in {o.name for o in records.values()} or other == r.name:
                raise RegistryError(f"{where}: {other!r} is not another exercise with a record")
        for callee in r.callees:
            if callee not in answered:
                raise RegistryError(f"{where}: callee {callee!r} has no answer in its record (answers.py)")
    for name, r in records.items():
        where = f"{RECORDS_DIR / name}.py"
        seen, todo = set(), list(r.callees)
        while todo:
            callee = todo.pop()
            if callee == r.name:
                raise RegistryError(f"{where}: its callees call it back (the callees must be a ladder)")
            if callee not in seen:
                seen.add(callee)
                todo += records[answered[callee]].callees


RECORDS: dict[str, Exercise] = _records()   # by record key (``key``): an exercise's name, as a rule
check(RECORDS, _graded())
BY_NAME: dict[str, list[Exercise]] = {}
for _record in RECORDS.values():
    BY_NAME.setdefault(_record.name, []).append(_record)
check_graders(_graded())
KEYS: dict[str, tuple[Question, ...]] = _keys()
QUESTIONS: dict[str, Question] = {q.name: q for questions in KEYS.values() for q in questions}
if len(QUESTIONS) != sum(len(questions) for questions in KEYS.values()):
    raise RegistryError("two answer keys name the same quiz question: `question` could not tell them apart")
