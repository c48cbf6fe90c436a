"""The package's own tests, laid out as the package: ``tests/<part>/`` holds the tests of ``autograder/<part>/``, the
top level those of the top-level modules and of the repository as a whole. Helpers shared by tests are the package
``tests.helpers``; the repository root is on ``sys.path`` through pytest's ``pythonpath`` (pyproject.toml), the one
place that puts it there."""
