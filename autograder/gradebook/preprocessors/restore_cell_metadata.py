"""nbgrader integration: put back the nbgrader metadata a student changed, before nbgrader's sanitising checks.

nbgrader aborts a whole submission on some edits of cell metadata ("Inconsistent checksums", a grade cell without
a grade_id, an outdated schema version). Placed first in ``c.Autograde.sanitize_preprocessors``, this restores
every nbgrader cell's metadata and cell type from the gradebook's record of the released notebook (by
``grade_id``), and turns cells whose ``grade_id`` is unknown or repeated into plain cells. nbgrader's own
``OverwriteCells`` then restores the locked cells' sources as usual. The submitted file is not touched (nbgrader
works on its copy in memory).
"""
from __future__ import annotations

from nbformat.v4 import new_code_cell, new_markdown_cell
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor


class RestoreCellMetadata(NbGraderPreprocessor):
    """Restore nbgrader metadata and cell types from the gradebook; unknown or repeated grade cells become plain."""

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        try:
            with Gradebook(info["db_url"]) as gb:
                record = gb.find_notebook(info["notebook"], info["assignment"])
                grades = {c.name: c.max_score for c in record.grade_cells}
                solutions = {c.name for c in record.solution_cells}
                sources = {c.name: (c.cell_type, c.locked, c.checksum) for c in record.source_cells}
        except (KeyError, MissingEntry):
            return nb, resources
        seen, cells, repaired = set(), [], 0
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader")
            if meta is None:
                cells.append(cell)
                continue
            grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
            if grade_id not in sources or grade_id in seen:
                del cell.metadata["nbgrader"]
                cells.append(cell)
                repaired += 1
                continue
            seen.add(grade_id)
            cell_type, locked, checksum = sources[grade_id]
            wanted = {"grade_id": grade_id, "grade": grade_id in grades, "solution": grade_id in solutions,
                      "locked": bool(locked), "schema_version": 3}
            if grade_id in grades:
                wanted["points"] = grades[grade_id]
            if checksum:
                wanted["checksum"] = checksum
            if cell.cell_type != cell_type:
                cell = _as_type(cell, cell_type)
            if any(meta.get(k) != v for k, v in wanted.items()) or set(meta) - set(wanted) - {"cell_type"}:
                repaired += 1
            cell.metadata["nbgrader"] = wanted
            cells.append(cell)
        nb.cells = cells
        if repaired:
            self.log.warning("Restored the nbgrader metadata of %d cell(s) in %s", repaired, info.get("notebook"))
        return nb, resources


def _as_type(cell, cell_type):
    """The same source and metadata in a cell of ``cell_type``."""
    new = new_code_cell(cell.source) if cell_type == "code" else new_markdown_cell(cell.source)
    new.metadata = cell.metadata
    if "id" in cell:
        new["id"] = cell["id"]
    return new
