"""Helpers shared by the tests (imported as ``tests.helpers.<name>``): the course's notebooks and the alternative
implementations (``notebooks``), a graded notebook's scores (``graded``), grading in this process without the
sandbox (``inprocess``), a minimal notebook (``minimal``), the tests' PostgreSQL server (``postgres``) and nbgrader's
own suite in the background (``nbgrader_suite_run``)."""
