"""The hub's spawner: JupyterHub's local-process spawner with per-user limits (``autograder/hub/limits.py``).

``LimitedSpawner`` reads the same settings as systemdspawner (The Littlest JupyterHub's spawner): ``mem_limit``
and ``cpu_limit`` (JupyterHub's own ``Spawner`` options, which the plain local-process spawner ignores), plus
``cpu_weight``, ``max_processes`` and ``file_size_limit``; ``python -m autograder hub`` sets them from
``course_config.py`` (``COURSE["hub"]``). Before a user's server starts, the hub (root) makes the user's control
group(s) with those limits; the server's process joins them between fork and exec, as root, then drops to the
user's uid (JupyterHub's own ``set_user_setuid``). In between it enters a mount namespace of its own with a private
``/tmp`` and ``/dev/shm`` and a ``/proc`` without other users' processes (``autograder/hub/private.py``). A server
whose group or namespace cannot be made or joined does not start. When the server stops, whatever the student left
running in the group is ended and the group removed; the namespace, with what was in ``/tmp`` and ``/dev/shm``,
ends with the last of them.

Each server's processes may hold at most ``open_files`` open files each (RLIMIT_NOFILE, the hard limit), and its
stdout and stderr are a pipe into a log of that user's own (``autograder/hub/server_log.py``), never the hub's log;
its stdin is ``/dev/null`` (not the terminal the hub was started from).
"""
from __future__ import annotations

import asyncio
import resource
import subprocess
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Float, Integer, Unicode

from autograder.hub import limits, private, server_log


PRIVATE_TMP_MB = 1024        # each of /tmp and /dev/shm, where no memory limit is set


class LimitedSpawner(LocalProcessSpawner):
    cgroup_name = Unicode("autograder-hub", help="Name of the parent control group of every user's group, below "
                          "the hub's own group (one per hub: the course id).").tag(config=True)
    cpu_weight = Integer(100, help="Each user's share of the CPU when the machine is busy, relative to the others "
                         "(cgroup v2's weight, 1..10000; 100 for everyone: equal shares per user, not per "
                         "process).").tag(config=True)
    max_processes = Integer(0, help="Most tasks (processes and threads) of one user's server with everything it "
                            "started; 0: no limit.").tag(config=True)
    file_size_limit = Float(0, help="Largest file (MiB) a user's process may write (RLIMIT_FSIZE, inherited by "
                            "every child; the hard limit, which the user cannot raise); 0: no limit.").tag(config=True)
    open_files = Integer(0, help="Files one process of the user's server may hold open (RLIMIT_NOFILE, soft and "
                         "hard); 0: the hub's own limit.").tag(config=True)
    server_log_dir = Unicode("", help="Folder of each user's server log (<user>.log, root's); empty: the server's "
                             "output goes where the hub's does.").tag(config=True)
    server_log_bytes = Integer(1 << 20, help="Most bytes of one server log file (and as many in the previous "
                               "one).").tag(config=True)

    def user_limits(self) -> limits.UserLimits:
        return limits.UserLimits(memory_mb=int(self.mem_limit / 2**20) if self.mem_limit else None,
                                 cpu_limit=self.cpu_limit or None, cpu_weight=self.cpu_weight,
                                 max_processes=self.max_processes or None)

    def groups(self) -> limits.Groups:
        return limits.detect(self.cgroup_name)

    def make_preexec_fn(self, name):
        procs = self.groups().make(name, self.user_limits())
        self.log.info("%s's server in control group(s) %s with %s", name, ", ".join(str(p.parent) for p in procs),
                      self.user_limits())
        setuid = super().make_preexec_fn(name)
        fsize = int(self.file_size_limit * 2**20) if self.file_size_limit else None
        nofile = int(self.open_files) or None
        mounts = private.mounts(int(self.mem_limit / 2**20) if self.mem_limit else PRIVATE_TMP_MB)

        def preexec():
            limits.join(procs)                       # still root: the user's processes never run outside the group
            private.enter(mounts)                    # /tmp, /dev/shm and /proc of the user's own (before the uid)
            if fsize:
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
            setuid()

        return preexec

    async def start(self):
        """JupyterHub's start, with the server's output going into its own log and its stdin from /dev/null."""
        log = None
        if self.server_log_dir:
            log = server_log.ServerLog(Path(self.server_log_dir) / f"{self.user.name}.log", self.server_log_bytes)
            self.popen_kwargs = {**self.popen_kwargs, "stdout": log.fd, "stderr": subprocess.STDOUT}
        self.popen_kwargs = {**self.popen_kwargs, "stdin": subprocess.DEVNULL}
        try:
            return await super().start()
        finally:
            if log is not None:
                log.started()

    async def stop(self, now=False):
        await super().stop(now=now)
        await asyncio.to_thread(self.groups().stop, self.user.name)
