"""Tests of the hub's pieces. The hub's config (``autograder/hub/jupyterhub_config.py``), read in a test's own process
(``server.load_config``), sets tornado's defaults for every HTTP server made after it (``origins.bound_connections``):
undone after each test."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def tornado_server_defaults():
    yield
    from tornado.httpserver import HTTPServer

    HTTPServer.configure(None)
