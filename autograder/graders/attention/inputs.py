"""Random inputs of the attention graders (drawn from the per-test generator ``rng``)."""
from __future__ import annotations

import numpy as np


def normal(rng, *shape, dtype=np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def key_mask(rng, *shape) -> np.ndarray:
    """A random boolean mask (True = may attend) of ``shape`` (..., Tq, Tk) with no fully masked row."""
    mask = rng.random(shape) < 0.6
    rows = np.indices(shape[:-1])
    keep = rng.integers(0, shape[-1], size=shape[:-1])
    mask[(*rows, keep)] = True
    return mask


def hidden_keys_mask(rng, tk):
    """A (1, Tk) mask: about half of the keys hidden from every query (at least two hidden, at least two visible)."""
    return (rng.permutation(tk) < rng.integers(2, tk - 1))[None, :]


def draw(rng, lead, tq, tk, d, dv, mask_kind):
    """query (..., Tq, d), key (..., Tk, d), value (..., Tk, dv) and a mask of the given kind (full, 2d, keys, none)."""
    q, k, v = normal(rng, *lead, tq, d), normal(rng, *lead, tk, d), normal(rng, *lead, tk, dv)
    if mask_kind == "full":
        mask = key_mask(rng, *lead, tq, tk)
    elif mask_kind == "2d":
        mask = key_mask(rng, tq, tk)
    elif mask_kind == "keys":
        mask = key_mask(rng, 1, tk)
    else:
        mask = None
    return q, k, v, mask
