"""Fixtures of the hidden graders: the student's functions, the run's seed and a per-test random generator."""
import numpy as np
import pytest

from autograder.graders.plugin import SESSION_KEY


def _session(request):
    session = request.config.stash.get(SESSION_KEY, None)
    if session is None:
        pytest.skip("the graders run only through `python -m autograder grade` or nbgrader autograde")
    return session


@pytest.fixture
def student(request):
    """The submission's functions: ``student.softmax(x)`` runs the student's ``softmax`` in the sandbox."""
    return _session(request).student


@pytest.fixture
def seed(request) -> int:
    return _session(request).seed


@pytest.fixture
def rng(request) -> np.random.Generator:
    """Fresh inputs every run, reproducible from the run's seed and this test's id."""
    return _session(request).rng_for(request.node.nodeid)
