"""The tests of autograder/sandbox: the wire format (unit tests, in this process); the attack and fault catalogues,
with bubblewrap really around the student's code, are in live/."""
