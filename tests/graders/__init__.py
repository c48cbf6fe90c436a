"""The tests of autograder/graders: each assignment's hidden graders proven both ways, the registry, the static checks,
the diagnosis, exercise isolation, the graders' Keras layers and the stored GPU references."""
