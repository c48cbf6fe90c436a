"""The tests of autograder/feedback: student HTML made inert, the instructor's similarity report."""
