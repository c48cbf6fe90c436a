"""Connections bounded in time: every tornado HTTP server of the hub (the hub's API, formgrader, each user's
JupyterLab) closes a connection that brings no complete request (its headers) within ``idle_s`` seconds (tornado's
default: an hour) and a body that takes longer than ``BODY_S`` to arrive. Set before the server is made, with
tornado's documented way to give every ``HTTPServer`` defaults (``Configurable.configure``; a server made with its
own values keeps them: the exchange's door). The hub's API gets it from the hub's config
(``autograder/hub/jupyterhub_config.py``); every JupyterLab of the hub from its environment's config
(``environment.server_timeouts``), which runs ``SERVER_CONFIG`` (the environment has no ``autograder`` package).
How many connections one user's processes may hold at once is the firewall's (``firewall.py``)."""
from __future__ import annotations

BODY_S = 600            # a notebook uploaded over a slow classroom network
SERVER_CONFIG = ("from tornado.httpserver import HTTPServer\n\n"
                 "HTTPServer.configure(None, idle_connection_timeout={idle_s!r}, body_timeout={body_s!r})\n")


def bound_connections(idle_s: float, body_s: float = BODY_S) -> None:
    """Every tornado ``HTTPServer`` made after this in the process: closed when idle for ``idle_s`` (what
    ``SERVER_CONFIG`` does in a JupyterLab)."""
    from tornado.httpserver import HTTPServer

    HTTPServer.configure(None, idle_connection_timeout=float(idle_s), body_timeout=float(body_s))
