"""The environment the course runs and is measured in is the one its requirements pin (scripts/setup.sh installs them).

A pin is there for a reason written next to it: torch's CPU build, nbgrader's line, soupsieve's regexes, ml_dtypes's
import time (0.7.0 loads in 0.5-0.6 s, twice per grading command, against 5 ms for 0.6.0). A package that drifted
from its pin (installed by hand, or by another package's resolver) makes those reasons untrue without a sign.
"""
from __future__ import annotations

import importlib.metadata

import pytest

FILES = ("requirements.txt", "requirements-browser.txt", "requirements-nodeps.txt")


def pins(root) -> list[tuple[str, str, str]]:
    found = []
    for name in FILES:
        for line in (root / name).read_text(encoding="utf-8").splitlines():
            requirement = line.split("#", 1)[0].strip()
            if requirement:
                package, _, version = requirement.partition("==")
                assert version, f"{name}: {requirement!r} is not pinned with =="
                found.append((name, package.strip(), version.strip()))
    return found


def test_every_requirement_is_pinned_and_installed_at_its_pin(root):
    drifted = []
    for name, package, version in pins(root):
        try:
            installed = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        # a local build keeps its version and adds a label: torch 2.13.0+cpu
        if installed is None or installed.split("+", 1)[0] != version:
            drifted.append(f"{name}: {package}=={version}, installed {installed}")
    assert not drifted, "run scripts/setup.sh: " + "; ".join(drifted)


@pytest.mark.parametrize("package", ["torch", "keras", "ml_dtypes", "numpy"])
def test_the_packages_a_grading_imports_are_pinned(root, package):
    assert package in {p.replace("-", "_") for _, p, _ in pins(root)}
