"""copydetect's fingerprints of a piece of code (made reproducible), the comparison of two pieces, and the matched
parts marked in escaped HTML."""
from __future__ import annotations

import contextlib
import html
import io
import re
from dataclasses import dataclass, field

NOISE = 25          # k: the shortest run of filtered characters that counts as a match (copydetect's noise_t)
GUARANTEE = 30      # every common run this long is found (copydetect's guarantee_t; window = 30 - 25 + 1)


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


def fingerprint(code: str, boilerplate=None, window: int = GUARANTEE - NOISE + 1) -> Fingerprint:
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
        hashes |= fingerprint(source, window=1).hashes
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
