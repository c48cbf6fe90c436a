"""Sphinx configuration of the course's documentation (MyST Markdown pages; ``tests/test_docs.py`` builds it with
warnings as errors). The reference pages of the CLI and of ``course_config.py`` are generated at build time from the
code's own help (``_ext/autograder_docs.py``); nothing here imports keras or torch."""
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS / "_ext"), str(DOCS.parent)]

project = "어텐션 메커니즘 (attention-ko)"
author = "the course's instructors"
extensions = ["myst_parser", "autograder_docs"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "_ext"]
root_doc = "index"
myst_heading_anchors = 3
myst_enable_extensions = ["deflist"]
html_theme = "alabaster"
html_title = project
html_static_path: list = []
language = "en"
