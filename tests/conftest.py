import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
