"""A submission as data: its files read safely (``files.py``) and its notebook turned into the code the student's
process runs (``notebook.py``). Nothing of a submission is executed here; this layer imports only ``settings`` and
``messages`` below it."""
