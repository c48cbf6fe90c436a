"""A small two-exercise attention notebook (softmax, scaled dot-product) for the core's tests.

Built the way docs/authors/adding-an-exercise.md describes, so that these tests do not depend on the course
notebook's text.
"""
import nbformat
from nbformat.v4 import new_code_cell, new_notebook

SOFTMAX = '''def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
'''

SDPA = '''def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores)
    out = weights @ value
    return (out, weights) if return_weights else out
'''


def cell(source, grade_id=None, grade=False, solution=False, points=None):
    c = new_code_cell(source)
    if grade_id:
        meta = {"grade": grade, "solution": solution, "locked": not solution, "grade_id": grade_id,
                "schema_version": 3}
        if points is not None:
            meta["points"] = points
        c.metadata["nbgrader"] = meta
    return c


def notebook(softmax=SOFTMAX, sdpa=SDPA, extra=()):
    """Solution cells for softmax and SDPA (sources given), grade cells after each; ``extra`` cells at the end."""
    cells = [
        cell("import numpy as np"),
        cell(softmax, "solution_softmax", solution=True),
        cell("print('visible check')", "test_softmax", grade=True, points=2),
        cell(sdpa, "solution_scaled_dot_product_attention", solution=True),
        cell("print('visible check')", "test_scaled_dot_product_attention", grade=True, points=3),
        *[cell(src) for src in extra],
    ]
    return new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                             "language": "python"}})


def write(nb, path):
    nbformat.write(nb, str(path))
    return path
