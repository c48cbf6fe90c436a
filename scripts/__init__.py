"""The repository's scripts: shell scripts (setup, tests, demo, PostgreSQL, the kernel) and instructors' and
maintainers' Python tools that are not part of grading (``python -m scripts.<name>`` from the repository root).
Nothing in ``autograder/`` imports them."""
