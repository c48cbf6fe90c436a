"""What the hub process adds for one origin per user and per service (``autograder/hub/layout.py``), installed by
the hub's config (``autograder/hub/jupyterhub_config.py``): ``ServiceRedirect``, which sends ``/services/<name>/...``
asked of the hub's name or a user's (nbgrader's course list in an instructor's JupyterLab links formgrader there) to
the service's own name, where the proxy routes it."""
from __future__ import annotations

from jupyterhub.handlers import BaseHandler
from jupyterhub.utils import url_path_join
from tornado import web


class ServiceRedirect(BaseHandler):
    """``/hub/services/<name>/<rest>`` (where the hub sends ``/services/...`` asked of a name that is not the
    service's) to ``<the service's own origin>/services/<name>/<rest>``."""

    def get(self, name, rest=None):
        service = self.services.get(name)
        if service is None or not service.host:
            raise web.HTTPError(404)
        query = f"?{self.request.query}" if self.request.query else ""
        self.redirect(service.host + url_path_join(service.prefix, (rest or "/").lstrip("/")) + query)
