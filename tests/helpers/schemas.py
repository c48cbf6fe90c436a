"""Schemas of outside tools that the package's outputs are checked against, fetched from a package registry.

Jenkins' JUnit schema (the xunit plugin's ``junit-10.xsd``) is not committed here: pytest checks its own JUnit XML
against a copy of it that its source distribution carries (``testing/example_scripts/junit-10.xsd``; pytest's copy
is the plugin's with ``version`` allowed on ``<testsuite>`` and at most three decimals in ``time``, which is stricter
than the plugin's for times). The source distribution of the pytest this repository pins is fetched once from the
package index (its simple page's link, whose sha256 must equal the one written here), and the schema kept under
``build/schemas``.
"""
from __future__ import annotations

import hashlib
import io
import re
import tarfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "build" / "schemas"
INDEX = "https://pypi.org/simple"
PYTEST_SDIST = "pytest-9.2.0.tar.gz"
PYTEST_SDIST_SHA256 = "97c4f3b1f3c7414aa36465e09b8220f1d03627993bd51b1282e193753c80557b"
MEMBER = "pytest-9.2.0/testing/example_scripts/junit-10.xsd"


def jenkins_junit_xsd() -> Path:
    """The path of Jenkins xunit's ``junit-10.xsd`` as pytest 9.2.0's source distribution carries it."""
    target = CACHE / "junit-10.xsd"
    if target.is_file():
        return target
    page = urllib.request.urlopen(f"{INDEX}/pytest/", timeout=60).read().decode()
    link = re.search(rf'href="([^"#]*/{re.escape(PYTEST_SDIST)})#sha256=([0-9a-f]{{64}})"', page)
    if link is None:
        raise RuntimeError(f"{INDEX}/pytest/ lists no {PYTEST_SDIST}")
    data = urllib.request.urlopen(link.group(1), timeout=120).read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != PYTEST_SDIST_SHA256:
        raise RuntimeError(f"{PYTEST_SDIST}: sha256 {digest}, expected {PYTEST_SDIST_SHA256}")
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        schema = archive.extractfile(MEMBER).read()
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(schema)
    partial.replace(target)
    return target
