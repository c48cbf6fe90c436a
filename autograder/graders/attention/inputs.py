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
