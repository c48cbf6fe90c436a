"""The tests of autograder/demo: the demo class through nbgrader's exchange, end to end."""
