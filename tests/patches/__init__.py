"""The tests of autograder/patches: nbgrader's code as the course changes it."""
