"""The files of the hub's environment that only a patch changes (``FILE_PATCHES`` in ``autograder.patches``),
applied by ``python -m autograder hub`` when it builds the environment (``autograder/hub/environment.py``)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from autograder.patches import FILE_PATCHES

PIPE_MAX_BYTES = 64 << 20       # one message of a kernel's forked child (its output, a figure) through the IOPub pipe


def patch_values() -> dict:
    """The values the file patches are written with: the course's precision; the largest message of a kernel's IOPub
    pipe; the Validate buttons' Korean words (JavaScript string literals)."""
    import json

    from autograder import scores
    from autograder.messages import ListText, ValidateText

    def js(text: str) -> str:
        return json.dumps(text, ensure_ascii=False)

    return {"decimals": scores.decimals(), "pipe_max_bytes": PIPE_MAX_BYTES,
            "running": js(ValidateText.RUNNING.korean()), "cancelling": js(ValidateText.CANCELLING.korean()),
            "title": js(ValidateText.TITLE.korean()),
            "not_run": js(ValidateText.NOT_RUN.korean(reason="")),
            "not_submitted": js(ListText.NOT_SUBMITTED.korean()),
            "not_submitted_why": js(ListText.NOT_SUBMITTED_WHY.korean())}


def apply_file_patches(prefix: Path, source: Path = Path(sys.prefix)) -> list[str]:
    """Patch ``FILE_PATCHES`` into the environment at ``prefix`` (made from ``source``): each file made anew from
    the source's upstream file with every patch of that file, in order, written where it differs (idempotent), never
    through a hard link. Returns the names of the patches of the files it wrote. Raises ``UpstreamChanged`` where a
    source file is not the upstream one a patch was written against."""
    values, written, files = patch_values(), [], {}
    for patch in FILE_PATCHES:
        files.setdefault(patch.path, []).append(patch)
    for group in files.values():
        target = group[0].target(prefix)
        upstream = group[0].target(source).read_text(encoding="utf-8")
        new = upstream
        for patch in group:
            new = patch.patched(upstream, onto=new, **values)
        if target.is_file() and target.read_text(encoding="utf-8") == new:
            continue
        fresh = target.with_name(target.name + ".patching")
        fresh.write_text(new, encoding="utf-8")
        os.chmod(fresh, 0o644)
        os.replace(fresh, target)          # a new inode: the hard link into .venv is replaced, not written through
        written += [patch.name for patch in group]
    return written
