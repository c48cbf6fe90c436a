import sys

# jsonschema (under nbformat and nbgrader) imports rfc3987_syntax at its own import, building a Lark grammar (~2 s)
# for string formats no notebook or nbgrader schema uses: imported at its first use instead. The course's .venv does
# this in every interpreter (scripts/setup.sh); here for a python -m autograder without it.
if "rfc3987_syntax" not in sys.modules:
    from autograder.patches.startup import install

    install()

from autograder.cli import exit_now, main  # noqa: E402

exit_now(main())
