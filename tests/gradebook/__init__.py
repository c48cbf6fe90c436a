"""The tests of autograder/gradebook: the course's nbgrader preprocessors."""
