"""The tests of autograder/hub without a hub (its layout, roster, exchange checks and guard, TLS, limits, leftovers,
the checkout check); the tests against a real JupyterHub are in live/."""
