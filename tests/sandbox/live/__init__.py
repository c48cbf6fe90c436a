"""The sandbox's attack and fault catalogues, with bubblewrap really around the student's code (fixtures in
conftest.py)."""
