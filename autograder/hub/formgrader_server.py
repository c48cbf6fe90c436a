"""The formgrader service's server: no kernel and no terminal that a page could start.

Formgrader grades with its own server-side code (nbgrader's API in the server, the course's sandbox); a page of
formgrader's may read what the grading account may read (the course copy with the answer key) and so must not run
code: the server starts no kernel (``NoKernels``: the kernels and sessions APIs answer 403) and lists none
(``NoKernelSpecs``: notebooks open to be read, with no kernel), and its terminals are off
(``--ServerApp.terminals_enabled=False`` in the hub's config).
"""
from __future__ import annotations

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado import web

REFUSED = "formgrader starts no kernels: run notebooks in your own JupyterLab"


class NoKernels(AsyncMappingKernelManager):
    """The kernel manager of formgrader's server: every start refused (the kernels and the sessions APIs)."""

    async def start_kernel(self, *, kernel_id=None, path=None, **kwargs):
        raise web.HTTPError(403, REFUSED)


class NoKernelSpecs(KernelSpecManager):
    """No kernel to choose from in formgrader's JupyterLab."""

    def find_kernel_specs(self):
        return {}
