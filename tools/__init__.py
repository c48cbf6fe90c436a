"""Instructors' and maintainers' tools that are not part of grading (``python -m tools.<name>`` from the repository
root). Nothing in ``autograder/`` imports them."""
