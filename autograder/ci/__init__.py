"""Grading outside the course's own machines: CI (GitHub Actions, ``examples/github-actions/grade.yml``) and
Gradescope.

One job a module: ``times`` (the course's due dates and submission times, and the assignment a scheduled run
grades), ``late`` (the late penalty of one graded notebook), ``annotations`` (GitHub's workflow commands, encoded),
``gather`` (the class's per-student results into one grade sheet), ``gradescope`` (the autograder package and what
it runs), ``command`` (their ``python -m autograder`` commands). Nothing here imports the graders, torch or nbgrader
unless it grades: a workflow's bookkeeping steps run them with a bare Python 3.11.
"""
