import sys

# jsonschema (under nbformat and nbgrader) imports rfc3987_syntax only for its "iri" string formats, which no
# notebook or nbgrader schema uses, and that import builds a Lark grammar: 0.8 s of every command's start.
sys.modules.setdefault("rfc3987_syntax", None)

from autograder.cli import main  # noqa: E402

raise SystemExit(main())
