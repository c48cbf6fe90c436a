"""The formgrader service's server: in a control group of its own, as the grading account, with no kernel and no
terminal that a page could start.

``python -m autograder.hub.formgrader_server --cgroup PARENT --memory-mb N --user ACCOUNT -- COMMAND...`` is the
service's command in the hub's config. The hub starts it as root; it joins the group ``PARENT/formgrader-service``
(below the hub's own group, beside the users' and the exchange's; ``memory_mb`` for the service with all the
grading it runs, swap included), then becomes the grading account (its groups, its HOME) and runs ``COMMAND``
(JupyterLab, ``jupyterhub-singleuser``). What a grading run holds is charged to that group: past its limit the
kernel's OOM killer ends a process of formgrader's, never one of another user or of the hub.

Formgrader grades with its own server-side code (nbgrader's API in the server, the course's sandbox); a page of
formgrader's may read what the grading account may read (the course copy with the answer key) and so must not run
code: the server starts no kernel (``NoKernels``: the kernels and sessions APIs answer 403) and lists none
(``NoKernelSpecs``: notebooks open to be read, with no kernel), and its terminals are off
(``--ServerApp.terminals_enabled=False`` in the hub's config).
"""
from __future__ import annotations

import argparse
import os
import pwd
import sys

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado import web

GROUP = "formgrader-service"            # beside the users' groups and the exchange's ("exchange-service")
REFUSED = "formgrader starts no kernels: run notebooks in your own JupyterLab"


class NoKernels(AsyncMappingKernelManager):
    """The kernel manager of formgrader's server: every start refused (the kernels and the sessions APIs)."""

    async def start_kernel(self, *, kernel_id=None, path=None, **kwargs):
        raise web.HTTPError(403, REFUSED)


class NoKernelSpecs(KernelSpecManager):
    """No kernel to choose from in formgrader's JupyterLab."""

    def find_kernel_specs(self):
        return {}


def become(user: str) -> dict:
    """This process (root) as ``user``: its groups, gid and uid; returns the environment for it."""
    entry = pwd.getpwnam(user)
    os.setgroups(os.getgrouplist(user, entry.pw_gid))
    os.setgid(entry.pw_gid)
    os.setuid(entry.pw_uid)
    return {**os.environ, "HOME": entry.pw_dir, "USER": user, "LOGNAME": user, "SHELL": entry.pw_shell}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m autograder.hub.formgrader_server",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--cgroup", required=True, help="the parent control group (below the hub's own) of the "
                        "service's own group")
    parser.add_argument("--memory-mb", type=int, default=0, help="the group's memory (MiB; 0: no limit)")
    parser.add_argument("--user", required=True, help="the account the service runs as (the grading account)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- and the server's command line")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    if os.geteuid() != 0:
        sys.exit("formgrader_server: must start as root (it joins a control group, then drops to the account)")
    from autograder.hub import limits

    groups = limits.detect(args.cgroup)
    limits.join(groups.make(GROUP, limits.UserLimits(memory_mb=args.memory_mb or None)))
    env = become(args.user)
    os.execve(command[0], command, env)


if __name__ == "__main__":
    main()
