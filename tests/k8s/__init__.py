"""The tests of autograder/k8s: the cluster bundle."""
