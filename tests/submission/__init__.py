"""The tests of autograder/submission: submitted files are data, the assignment found from the notebook."""
