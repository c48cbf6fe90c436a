"""The tests of autograder/sandbox: the sandboxed process, the wire format between it and the grader."""
