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
"""
from __future__ import annotations

import ast
import contextlib
import functools
import html
import importlib.util
import io
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

OTHER = "(other code)"
# A unit longer than this is compared on its first MAX_UNIT characters (a cell of pasted data could otherwise take
# minutes to tokenise; the longest unit of the demo class, a student's helpers, has under 3,000).
MAX_UNIT = 20_000
NOISE = 25          # k: the shortest run of filtered characters that counts as a match (copydetect's noise_t)
GUARANTEE = 30      # every common run this long is found (copydetect's guarantee_t; window = 30 - 25 + 1)

# The library routines of the forbidden rules (``autograder/graders/forbidden.py``: their run-time labels, as the
# monitor reports them), as files of the installed packages: (label, package, file inside it, what to take).
# ``"*"`` takes every function of the file (methods included); a name takes that top-level function or class
# (with its methods); ``"doc:NAME"`` takes the code blocks of the docstring assigned to NAME.
LIBRARY = (
    ("keras:layers.Attention", "keras", "src/layers/attention/attention.py", ("*",)),
    ("keras:layers.AdditiveAttention", "keras", "src/layers/attention/additive_attention.py", ("*",)),
    ("keras:layers.MultiHeadAttention", "keras", "src/layers/attention/multi_head_attention.py", ("*",)),
    ("keras:layers.GroupQueryAttention", "keras", "src/layers/attention/grouped_query_attention.py", ("*",)),
    ("keras:ops.dot_product_attention", "keras", "src/ops/nn.py", ("dot_product_attention",)),
    ("keras:ops.dot_product_attention", "keras", "src/backend/torch/nn.py",
     ("_get_large_negative", "_can_use_flash_attention", "dot_product_attention")),
    ("keras:ops.dot_product_attention", "keras", "src/backend/numpy/nn.py",
     ("_get_large_negative", "_apply_masks", "_dot_product_attention_xla", "dot_product_attention")),
    ("torch:softmax", "torch", "nn/functional.py", ("softmax",)),
    ("torch:softmax", "torch", "_refs/__init__.py", ("softmax",)),
    ("torch:softmax", "torch", "_refs/nn/functional/__init__.py", ("softmax",)),
    ("torch:softmax", "torch", "_refs/special/__init__.py", ("softmax",)),
    ("torch:softmax", "torch", "_decomp/decompositions.py",
     ("safe_softmax", "_softmax", "_softmax_unbacked_safe_amax")),
    ("torch:log_softmax", "torch", "nn/functional.py", ("log_softmax",)),
    ("torch:log_softmax", "torch", "_refs/__init__.py", ("log_softmax",)),
    ("torch:log_softmax", "torch", "_refs/nn/functional/__init__.py", ("log_softmax",)),
    ("torch:log_softmax", "torch", "_refs/special/__init__.py", ("log_softmax",)),
    ("torch:log_softmax", "torch", "_decomp/decompositions.py", ("_log_softmax",)),
    ("torch:scaled_dot_product_attention", "torch", "nn/functional.py", ("doc:scaled_dot_product_attention",)),
    ("torch:scaled_dot_product_attention", "torch", "_decomp/decompositions.py",
     ("scaled_dot_product_flash_attention_for_cpu",)),
    ("torch:multi_head_attention_forward", "torch", "nn/functional.py",
     ("multi_head_attention_forward", "_in_projection_packed", "_in_projection")),
    ("torch:multi_head_attention_forward", "torch", "nn/modules/activation.py", ("MultiheadAttention",)),
    ("scipy:special.softmax", "scipy", "special/_logsumexp.py", ("softmax",)),
    ("scipy:special.log_softmax", "scipy", "special/_logsumexp.py", ("log_softmax",)),
    # layer_norm's rule (forbidden.NORM): torch's normalisation functions, modules and reference decompositions,
    # Keras's normalisation layers and ops
    ("torch:layer_norm", "torch", "nn/functional.py", ("layer_norm",)),
    ("torch:layer_norm", "torch", "nn/modules/normalization.py", ("LayerNorm",)),
    ("torch:layer_norm", "torch", "_refs/__init__.py", ("native_layer_norm",)),
    ("torch:layer_norm", "torch", "_refs/nn/functional/__init__.py", ("layer_norm",)),
    ("torch:group_norm", "torch", "nn/functional.py", ("group_norm",)),
    ("torch:group_norm", "torch", "nn/modules/normalization.py", ("GroupNorm",)),
    ("torch:group_norm", "torch", "_refs/__init__.py", ("native_group_norm",)),
    ("torch:group_norm", "torch", "_refs/nn/functional/__init__.py", ("group_norm",)),
    ("torch:batch_norm", "torch", "nn/functional.py", ("batch_norm", "instance_norm")),
    ("torch:batch_norm", "torch", "nn/modules/batchnorm.py", ("_NormBase", "_BatchNorm")),
    ("torch:batch_norm", "torch", "_decomp/decompositions.py",
     ("native_batch_norm_helper", "native_batch_norm", "_native_batch_norm_legit")),
    ("torch:rms_norm", "torch", "nn/functional.py", ("rms_norm",)),
    ("torch:rms_norm", "torch", "nn/modules/normalization.py", ("RMSNorm",)),
    ("keras:layers.LayerNormalization", "keras", "src/layers/normalization/layer_normalization.py", ("*",)),
    ("keras:layers.GroupNormalization", "keras", "src/layers/normalization/group_normalization.py", ("*",)),
    ("keras:layers.BatchNormalization", "keras", "src/layers/normalization/batch_normalization.py", ("*",)),
    ("keras:layers.RMSNormalization", "keras", "src/layers/normalization/rms_normalization.py", ("*",)),
    ("keras:ops.normalization", "keras", "src/ops/nn.py",
     ("layer_normalization", "_layer_normalization", "rms_normalization", "_rms_normalization",
      "batch_normalization")),
    ("keras:ops.normalization", "keras", "src/backend/torch/nn.py", ("batch_normalization",)),
)


# ------------------------------------------------------------------------------------------------ code to units
def _normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def statements(source: str):
    """``[(node, source)]`` of a cell's top-level statements (``None``: the cell does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    lines = source.splitlines(keepends=True)
    found = []
    for node in tree.body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        found.append((node, "".join(lines[start - 1:node.end_lineno])))
    return found


@dataclass(frozen=True)
class Template:
    """The release's code: its cells and top-level statements (normalised text), which are nobody's own code."""
    cells: frozenset
    statements: frozenset

    @classmethod
    def of(cls, code_cells) -> Template:
        cells = frozenset(_normal(c) for c in code_cells)
        return cls(cells, frozenset(_normal(text) for c in code_cells for _, text in statements(c) or ()))


def units_of(code_cells, exercises, template: Template | None = None) -> dict[str, str]:
    """``{exercise or OTHER: source}`` of one notebook's code cells (the student's program, in cell order).

    A top-level ``def``/``class`` named after an exercise is that exercise's unit (a later one replaces an
    earlier one); every other top-level statement goes to ``OTHER``, except the release's own (a cell or a
    statement of ``template``, whitespace aside); a cell that does not parse goes to ``OTHER`` whole."""
    template = template or Template(frozenset(), frozenset())
    units: dict[str, str] = {}
    other = []
    for source in code_cells:
        if _normal(source) in template.cells:
            continue
        found = statements(source)
        if found is None:
            other.append(source)
            continue
        for node, text in found:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in exercises:
                units[node.name] = text
            elif _normal(text) not in template.statements:
                other.append(text)
    if any(s.strip() for s in other):
        units[OTHER] = "\n".join(other)
    return units


# ------------------------------------------------------------------------------------------------ fingerprints
SELF = re.compile(r"\bself\s*\.\s*")


def normalised(code: str):
    """``code`` without ``self.`` (a method pasted as a function loses it; a function pasted into a class gains it),
    and for each of its characters the index of that character in ``code`` (one more at the end)."""
    import numpy as np

    keep = np.ones(len(code) + 1, dtype=bool)
    for match in SELF.finditer(code):
        keep[match.start():match.end()] = False
    positions = np.flatnonzero(keep)
    return "".join(code[i] for i in positions[:-1]), positions


@dataclass
class Fingerprint:
    """copydetect's fingerprint of a normalised code, and where each normalised character was in the code."""
    fp: object
    positions: object

    @property
    def hashes(self):
        return self.fp.hashes

    @property
    def size(self) -> int:
        return int(self.fp.token_coverage)


_HASH_BITS = (1 << 52) - 1   # exact in a float64 (copydetect's pure-Python winnowing keeps hashes in floats)


def stable_kgram_hashes(string: str, k: int):
    """The hashes of every k-gram of ``string``: a polynomial hash of its characters (the same in every process,
    unlike Python's salted ``hash`` that copydetect uses), 52 bits."""
    import numpy as np

    codes = np.frombuffer(string.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    n = len(codes) - k + 1
    if n <= 0:
        return np.array([], dtype=np.int64)
    hashes = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(k):   # h = sum c[i + j] * B^(k-1-j), modulo 2^64
            hashes = hashes * np.uint64(1_000_003) + codes[j:j + n]
    return (hashes & np.uint64(_HASH_BITS)).astype(np.int64)


@contextlib.contextmanager
def _stable_hashes():
    """copydetect 0.5.0 hashes k-grams with ``hash()`` (``utils.hashed_kgrams``), which Python salts per process:
    the same class would give slightly different matches in every run. While fingerprinting, it uses
    ``stable_kgram_hashes`` instead (the same winnowing, the same k-grams), so a report is reproducible."""
    from copydetect import utils

    original = utils.hashed_kgrams
    utils.hashed_kgrams = stable_kgram_hashes
    try:
        yield
    finally:
        utils.hashed_kgrams = original


def _fingerprint(code: str, boilerplate=None, window: int = GUARANTEE - NOISE + 1) -> Fingerprint:
    from copydetect import CodeFingerprint

    text, positions = normalised(code)
    with _stable_hashes():
        fp = CodeFingerprint("unit.py", NOISE, window, boilerplate=boilerplate, fp=io.StringIO(text),
                             language="python")
    return Fingerprint(fp, positions)


def template_hashes(code_cells):
    """The fingerprints of the release's code (every k-gram, not winnowed): removed from every unit."""
    import numpy as np

    hashes = set()
    for source in code_cells:
        hashes |= _fingerprint(source, window=1).hashes
    return np.array(sorted(hashes))


@dataclass
class Piece:
    """One unit of code with its fingerprint (a student's exercise, a library routine group, the answer key)."""
    owner: str            # student id, library label, or "answer key"
    exercise: str
    code: str
    fingerprint: object = None
    parts: list = field(default_factory=list)   # library: (title, start, end) of each routine in ``code``

    def size(self) -> int:
        return self.fingerprint.size if self.fingerprint is not None else 0


@dataclass
class Match:
    """Two pieces that share more than the thresholds allow."""
    kind: str             # "pair", "library" or "key"
    exercise: str
    left: Piece
    right: Piece
    similarity: float     # the share of ``left``'s code found in ``right`` ("pair": the larger of both shares)
    matched: int          # filtered characters of ``left`` matched
    slices: tuple         # (left slices, right slices) in the raw code: 2 x N arrays of starts and ends

    def codes(self) -> tuple[str, str]:
        """Both codes as escaped HTML with the matched parts marked (a library group: only its routines that hold
        a match, each under a ``# file: routine`` line)."""
        right_code, right_slices = self.right.code, self.slices[1]
        if self.right.parts:
            right_code, right_slices = _cut_to_parts(self.right, right_slices)
        return highlight(self.left.code, self.slices[0]), highlight(right_code, right_slices)


def _cut_to_parts(piece: Piece, slices):
    """The routines of a library group that hold matched slices, and the slices moved into that text."""
    import numpy as np

    keep = [(title, start, end) for title, start, end in piece.parts
            if any(s < end and e > start for s, e in zip(slices[0], slices[1], strict=True))]
    text, moved = "", [[], []]
    for title, start, end in keep:
        offset = len(text) + len(f"# {title}\n") - start
        text += f"# {title}\n" + piece.code[start:end] + "\n"
        for s, e in zip(slices[0], slices[1], strict=True):
            if s < end and e > start:
                moved[0].append(max(s, start) + offset)
                moved[1].append(min(e, end) + offset)
    return text, np.array(moved, dtype=int)


def highlight(code: str, slices) -> str:
    """``code`` escaped, with the ``slices`` (starts, ends) marked by ``<mark>``."""
    spans = sorted(zip((int(s) for s in slices[0]), (int(e) for e in slices[1]), strict=True)) if len(slices) else []
    out, at = [], 0
    for start, end in spans:
        start = max(start, at)
        if end <= start:
            continue
        out.append(html.escape(code[at:start]) + "<mark>" + html.escape(code[start:end]) + "</mark>")
        at = end
    out.append(html.escape(code[at:]))
    return "".join(out)


def compare(left: Piece, right: Piece, kind: str, exercise: str, threshold: float, min_match: int) -> Match | None:
    """The match of two pieces when it passes both thresholds (library and key: measured on ``left``)."""
    from copydetect import compare_files

    a, b = left.fingerprint, right.fingerprint
    if a is None or b is None or not a.hashes or not b.hashes or a.hashes.isdisjoint(b.hashes):
        return None
    overlap, (sim_a, sim_b), slices = compare_files(a.fp, b.fp)
    similarity = max(sim_a, sim_b) if kind == "pair" else sim_a
    if similarity < threshold or overlap < min_match:
        return None
    return Match(kind, exercise, left, right, float(similarity), int(overlap),
                 (_unmap(slices[0], a.positions), _unmap(slices[1], b.positions)))


def _unmap(slices, positions):
    """Slices of a normalised code moved to the code itself (``normalised``)."""
    import numpy as np

    if not len(slices) or not len(slices[0]):
        return np.zeros((2, 0), dtype=int)
    starts = positions[np.clip(slices[0], 0, len(positions) - 1)]
    ends = positions[np.clip(slices[1] - 1, 0, len(positions) - 1)] + 1
    return np.array([starts, ends], dtype=int)


# ------------------------------------------------------------------------------------------------ library
def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)   # a top-level name: found without importing it
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "?"


def _doc_code(docstring: str) -> str:
    """The ``.. code-block:: python`` blocks of a docstring, dedented."""
    import textwrap

    blocks, lines, i = [], docstring.splitlines(), 0
    while i < len(lines):
        if lines[i].strip().startswith(".. code-block:: python"):
            indent = len(lines[i]) - len(lines[i].lstrip())
            i += 1
            block = []
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                block.append(lines[i])
                i += 1
            blocks.append(textwrap.dedent("\n".join(block)).strip("\n"))
        else:
            i += 1
    return "\n\n".join(blocks[:1])   # the first block: the reference implementation


def _without_docstring(node, lines) -> str:
    """A routine's source without its docstrings (its own and its methods'): shorter to tokenise and to read."""
    drop = set()
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body and \
                isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
                isinstance(body[0].value.value, str):
            drop.update(range(body[0].lineno, body[0].end_lineno + 1))
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "".join(lines[i - 1] for i in range(start, node.end_lineno + 1) if i not in drop)


_TOP = re.compile(r"^(?:@|def |async def |class |[A-Za-z_][A-Za-z0-9_]* = )")


def _top_level(source: str, names) -> list:
    """The top-level statements of a file that define one of ``names`` (a ``def``, a ``class``, an assignment),
    parsed on their own: a large file (torch's ``functional.py``) is not parsed whole. Each block runs from its
    first line (decorators included) to the next line that starts at column 0 with a name or a decorator; a block
    that does not parse on its own makes the whole file parsed instead."""
    lines = source.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if _TOP.match(line)]
    found = []
    for n, i in enumerate(starts):
        head = lines[i]
        if head.startswith("@"):
            continue
        match = re.match(r"(?:async def |def |class )?([A-Za-z_][A-Za-z0-9_]*)", head)
        if not match or match.group(1) not in names:
            continue
        first = i
        while first > 0 and lines[first - 1].startswith("@"):
            first -= 1
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        while end > i + 1 and lines[end - 1].startswith("@"):
            end -= 1
        try:
            tree = ast.parse("".join(lines[first:end]))
        except SyntaxError:
            return list(ast.parse(source).body), lines
        found.append((tree.body[0], lines[first:end]))
    return found, None


def routines(source: str, wanted) -> list[tuple[str, str]]:
    """``[(qualified name, source)]`` of the routines of one file that ``wanted`` names (see ``LIBRARY``),
    without docstrings."""
    found = []

    def functions(node, lines, prefix=""):
        for child in getattr(node, "body", []):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, _without_docstring(child, lines)))
            elif isinstance(child, ast.ClassDef):
                functions(child, lines, prefix + child.name + ".")

    if "*" in wanted:
        tree = ast.parse(source)
        functions(tree, source.splitlines(keepends=True))
        return found
    names = {w.removeprefix("doc:") for w in wanted}
    blocks, whole = _top_level(source, names)
    if whole is not None:   # the file had to be parsed whole
        blocks = [(node, whole) for node in blocks]
    for want in wanted:
        name = want.removeprefix("doc:")
        for node, lines in blocks:
            if want.startswith("doc:") and isinstance(node, ast.Assign) and \
                    any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                docs = [c.value for c in ast.walk(node) if isinstance(c, ast.Constant)
                        and isinstance(c.value, str) and "code-block" in c.value]
                if docs:
                    found.append((f"{name} (documentation)", _doc_code(docs[0])))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == want:
                found.append((want, _without_docstring(node, lines)))
            elif isinstance(node, ast.ClassDef) and node.name == want:
                functions(node, lines, want + ".")
    return found


@dataclass
class Library:
    pieces: list            # one Piece per label: its routines, one after another
    sources: list           # (label, "package version: file", [routine names]) read
    missing: list           # (label, why) of what could not be read


@functools.lru_cache(maxsize=None)
def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def library() -> Library:
    """The library routines of ``LIBRARY`` read from the installed files, one piece per run-time label (read and
    fingerprinted once per process)."""
    by_label: dict[str, list] = {}
    sources, missing = [], []
    for label, package, relative, wanted in LIBRARY:
        base = _package_dir(package)
        if base is None:
            missing.append((label, f"{package} is not installed"))
            continue
        path = base / relative
        try:
            found = routines(_read(path), wanted)
        except (OSError, SyntaxError, UnicodeDecodeError) as exc:
            missing.append((label, f"{package}/{relative}: {type(exc).__name__}"))
            continue
        names = [name for name, _ in found]
        lost = [w for w in wanted if w != "*" and not any(n == w.removeprefix("doc:") or
                                                          n.startswith(w.removeprefix("doc:") + ".") or
                                                          n.startswith(w.removeprefix("doc:") + " ")
                                                          for n in names)]
        if lost:
            missing.append((label, f"{package}/{relative}: not found: {', '.join(lost)}"))
        sources.append((label, f"{package} {_version(package)}: {relative}", names))
        where = f"{package}/{relative}"
        by_label.setdefault(label, []).extend((f"{where}: {name}", code) for name, code in found)
    pieces = []
    for label, found in by_label.items():
        code, parts = "", []
        for title, text in found:
            parts.append((title, len(code), len(code) + len(text)))
            code += text + "\n"
        piece = Piece(label, "", code, parts=parts)
        piece.fingerprint = _fingerprint(code)
        pieces.append(piece)
    return Library(pieces, sources, missing)


# ------------------------------------------------------------------------------------------------ a class
@dataclass(frozen=True)
class Options:
    """The thresholds (``COURSE["similarity"]`` of ``course_config.py``, where each value's measurement is)."""
    pair_threshold: float = 0.8
    library_threshold: float = 0.5
    min_match: int = 120

    @classmethod
    def from_course(cls) -> Options:
        from autograder import settings

        return cls(**settings.course().get("similarity", {}))


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
    options = options or Options()
    boilerplate = template_hashes(template_cells)
    template = Template.of(template_cells)
    exercises = list(exercises)
    lib = lib if lib is not None else library()
    cache: dict[str, Fingerprint] = {}   # code -> fingerprint: identical units are tokenised once

    def piece(owner, ex, code):
        if code not in cache:
            cache[code] = _fingerprint(code, boilerplate)
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
                  f"copydetect {_version('copydetect')} (k = {NOISE}, guarantee {GUARANTEE})", cut)


def _code_cells(nb) -> list[str]:
    return [c.source if isinstance(c.source, str) else "".join(c.source) for c in nb.cells if c.cell_type == "code"]


def for_course(course_dir, assignments, options: Options | None = None) -> dict[str, Report]:
    """The report of each coded assignment (``graders.registry.coded_assignments``: the quiz's answers are not code)
    of a course directory: the autograded notebooks (``autograded/<student>/<assignment>/``, the pipeline's own
    copies, read as data like every submission: ``autograder.submission``), the release as template, the answer key
    (``source/``) and the graders' catalogue of mistakes as the course's own material."""
    import nbformat

    from autograder.graders import mistakes, registry
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
        catalogue = [(f"mistake {m.id}", m.source) for m in mistakes.of_assignment(assignment)]
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
