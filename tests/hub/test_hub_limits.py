"""Per-user limits of the hub's servers (issue 20, G1): the spawner's control groups, against the real kernel.

Two throwaway students get servers the way the hub starts them (``LimitedSpawner.make_preexec_fn``: the groups are
made as root, the process joins them between fork and exec, then drops to the student's uid). Student A's "kernel"
(a child of A's server) allocates past A's memory limit; the kernel's OOM killer ends that process only: A's server,
and student B's processes, live on. Then: A cannot leave the group, a fork bomb stops at the process limit, a busy
loop gets at most the CPU quota. The parsing of both kernel interfaces (v1 here, v2 on a systemd server) is checked
on sample files. The hub test (tests/hub/live) repeats G1 in JupyterLab while another student validates.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from autograder.hub import limits

A, B = "hubops-g1a", "hubops-g1b"
CHILD_ALLOCATES = """
import os, subprocess, sys
kernel = subprocess.run([sys.executable, "-c", "x = bytearray({mb} * 2**20); print('allocated', flush=True)"])
print("kernel exit", kernel.returncode, flush=True)          # the server (this process) lives on
"""


@pytest.fixture(scope="module")
def students():
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root and useradd (the servers run as students' own Unix accounts)")
    try:
        limits.detect("hubops-probe")
    except limits.Unavailable as exc:
        pytest.skip(f"no control groups here: {exc}")
    for user in (A, B):
        subprocess.run(["userdel", "--remove", user], capture_output=True)
        subprocess.run(["useradd", "--create-home", "--user-group", "--shell", "/bin/bash", user], check=True)
    yield A, B
    for user in (A, B):
        subprocess.run(["userdel", "--remove", user], capture_output=True)


@pytest.fixture()
def spawner():
    """A LimitedSpawner of a hub of its own (its parent group removed after)."""
    from autograder.hub.spawner import LimitedSpawner

    made = []

    def make(**options):
        spawner = LimitedSpawner(cgroup_name=f"hubops-test-{uuid.uuid4().hex[:8]}", **options)
        made.append(spawner)
        return spawner

    yield make
    for spawner in made:
        groups = spawner.groups()
        for user in (A, B):
            groups.stop(user)
        for procs in groups.procs_files(A):
            try:
                procs.parent.parent.rmdir()
            except OSError:
                pass


def python() -> str:
    """A Python every user may run (the course's .venv may sit under root's pyenv)."""
    from autograder.hub.environment import shared_interpreter

    return str(shared_interpreter())


def server(spawner, user: str, code: str) -> subprocess.Popen:
    """``code`` run as ``user``'s server is: in the user's groups, as the user (the spawner's preexec)."""
    return subprocess.Popen([python(), "-c", code], preexec_fn=spawner.make_preexec_fn(user), cwd="/",
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ""})


def test_memory_past_the_limit_ends_only_the_students_own_process(students, spawner):
    hub = spawner(mem_limit="200M")
    other = server(hub, B, "import time\nx = bytearray(100 * 2**20)\nprint('B ready', flush=True)\n"
                           "time.sleep(30)\nprint('B alive', flush=True)")
    assert other.stdout.readline().strip() == "B ready"
    start = time.perf_counter()
    attacker = server(hub, A, CHILD_ALLOCATES.format(mb=1024))
    out, err = attacker.communicate(timeout=60)
    elapsed = time.perf_counter() - start
    groups = hub.groups()
    print(f"\n[limits] A's 1 GiB kernel ended after {elapsed:.2f} s; A's peak {groups.memory_peak_mb(A):.0f} MiB "
          f"(limit 200); OOM kills A {groups.oom_kills(A)}, B {groups.oom_kills(B)}")
    assert f"kernel exit -{signal.SIGKILL}" in out and "allocated" not in out, (out, err)   # the kernel, killed
    assert attacker.returncode == 0, err                                                      # its server lived on
    assert groups.oom_kills(A) >= 1 and groups.oom_kills(B) == 0
    assert other.poll() is None, "student B's process ended"
    other.send_signal(signal.SIGTERM)
    other.wait(timeout=30)


def test_a_student_cannot_leave_their_group(students, spawner):
    hub = spawner(mem_limit="200M")
    groups = hub.groups()
    escape = ("import os, sys\n"
              "for procs in sys.argv[1:]:\n"
              "    try:\n"
              "        open(procs, 'w').write(str(os.getpid()))\n"
              "        print('escaped', procs)\n"
              "    except OSError as e:\n"
              "        print('refused', type(e).__name__)\n")
    targets = [str(p.parent.parent.parent / "cgroup.procs") for p in groups.procs_files(A)] + \
              [str(p) for p in groups.procs_files(B)]
    proc = subprocess.Popen([python(), "-c", escape, *targets], preexec_fn=hub.make_preexec_fn(A),
                            stdout=subprocess.PIPE, text=True, cwd="/")
    out, _ = proc.communicate(timeout=30)
    assert "escaped" not in out and out.count("refused") == len(targets), out


def test_a_fork_bomb_stops_at_the_process_limit(students, spawner):
    hub = spawner(max_processes=20)
    bomb = ("import os, time\nchildren = 0\n"
            "for _ in range(100):\n"
            "    try:\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(5); os._exit(0)\n"
            "        children += 1\n"
            "    except BlockingIOError:\n"
            "        break\n"
            "print(children)\n")
    proc = server(hub, A, bomb)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert 0 < int(out) < 20, out
    hub.groups().stop(A)
    assert not hub.groups().processes(A)


def test_cpu_past_the_quota_is_throttled(students, spawner):
    """Two busy processes for 1.5 s of wall time under a quota of 0.2 cores get about 0.3 s of CPU (a loaded
    machine gives them less, never more); without the quota an idle 2-core machine gives them up to 3 s."""
    hub = spawner(cpu_limit=0.2)
    busy = ("import os, time, resource\npid = os.fork()\nend = time.monotonic() + 1.5\n"
            "while time.monotonic() < end: pass\n"
            "if pid == 0: os._exit(0)\nos.waitpid(pid, 0)\n"
            "r, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime)\n")
    proc = server(hub, A, busy)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    print(f"\n[limits] CPU time of 2 busy processes in 1.5 s under a 0.2-core quota: {float(out):.2f} s")
    assert float(out) < 0.6, out


# ------------------------------------------------------------------------------------------------ both interfaces
V1_MOUNTINFO = """31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V2_MOUNTINFO = "25 22 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"


def test_the_interfaces_are_read_from_mountinfo_and_proc_cgroup():
    v1, v2 = limits.mounts(V1_MOUNTINFO)
    assert v1 == {"cpu": Path("/sys/fs/cgroup/cpu,cpuacct"), "memory": Path("/sys/fs/cgroup/memory"),
                  "pids": Path("/sys/fs/cgroup/pids")} and v2 == Path("/sys/fs/cgroup/unified")
    assert limits.mounts(V2_MOUNTINFO) == ({}, Path("/sys/fs/cgroup"))
    own = limits.own_groups("4:memory:/system.slice/jupyterhub.service\n2:cpu,cpuacct:/\n8:pids:/x\n0::/y\n")
    assert own == ({"memory": "/system.slice/jupyterhub.service", "cpu": "/", "pids": "/x"}, "/y")


def test_cgroup_v2_delegation_written_as_systemd_wants_it(tmp_path):
    """A systemd unit with Delegate=yes (cgroup v2), on a copy of its files: the hub's processes move into
    ``<own>/hub``, the controllers are enabled below, the user's group gets memory.max (swap 0), cpu.max, cpu.weight
    and pids.max."""
    mount = tmp_path / "cgroup"
    own = mount / "system.slice" / "jupyterhub.service"
    own.mkdir(parents=True)
    (mount / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma misc\n")
    (own / "cgroup.procs").write_text("101\n102\n")
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mountinfo").write_text(V2_MOUNTINFO.replace("/sys/fs/cgroup", str(mount)))
    (proc / "cgroup").write_text("0::/system.slice/jupyterhub.service\n")
    groups = limits.detect("attention-ko", proc=proc)
    assert isinstance(groups, limits.GroupsV2)

    user = own / "attention-ko" / "student1"
    for group in (own / "hub", own / "attention-ko", user):     # what the kernel makes with each new group
        group.mkdir(parents=True, exist_ok=True)
        for name in ("cgroup.procs", "cgroup.subtree_control", "memory.swap.max"):
            (group / name).write_text("")
    procs = groups.make("student1", limits.UserLimits(memory_mb=2048, cpu_limit=1.5, cpu_weight=100,
                                                      max_processes=512))
    assert procs == [user / "cgroup.procs"]
    assert (own / "hub" / "cgroup.procs").read_text() == "102"     # each pid written in turn (the kernel keeps all)
    assert (own / "cgroup.subtree_control").read_text() == "+memory +cpu +pids"
    assert (own / "attention-ko" / "cgroup.subtree_control").read_text() == "+memory +cpu +pids"
    assert {f: (user / f).read_text() for f in ("memory.max", "memory.swap.max", "cpu.max", "cpu.weight",
                                                "pids.max")} == \
        {"memory.max": str(2048 * 2**20), "memory.swap.max": "0", "cpu.max": "150000 100000", "cpu.weight": "100",
         "pids.max": "512"}


def test_course_settings_become_the_spawners_limits():
    from autograder import settings

    hub = settings.course()["hub"]
    got = limits.UserLimits.from_course()
    assert got == limits.UserLimits(memory_mb=hub["mem_limit_mb"], cpu_limit=hub["cpu_limit"],
                                    cpu_weight=hub["cpu_weight"], max_processes=hub["max_processes"])
    files = got.v1_files()
    assert files["memory"]["memory.limit_in_bytes"] == str(hub["mem_limit_mb"] * 2**20)
    assert files["cpu"]["cpu.cfs_quota_us"] == str(round(hub["cpu_limit"] * limits.CFS_PERIOD_US))
    assert files["pids"]["pids.max"] == str(hub["max_processes"])


def test_the_hubs_config_runs_the_limited_spawner_and_the_idle_culler(tmp_path):
    from autograder import settings
    from autograder.hub import server
    from autograder.hub.layout import Layout

    hub = settings.course()["hub"]
    layout = Layout.for_course()
    c = server.load_config(server.Start.of(layout, ["student1"]), tmp_path)
    assert c.JupyterHub.spawner_class == "autograder.hub.spawner.LimitedSpawner"
    assert c.LimitedSpawner.cgroup_name == f"autograder-{layout.course_id}"
    assert c.LimitedSpawner.mem_limit == hub["mem_limit_mb"] * 2**20 and c.LimitedSpawner.cpu_limit == hub["cpu_limit"]
    assert c.LimitedSpawner.max_processes == hub["max_processes"]
    culler = [s for s in c.JupyterHub.services if s["name"] == "idle-culler"][0]
    assert culler["command"][1:3] == ["-m", "jupyterhub_idle_culler"]
    assert f"--timeout={hub['idle_timeout_s']}" in culler["command"]
    role = [r for r in c.JupyterHub.load_roles if r["name"] == "idle-culler"][0]
    assert role["services"] == ["idle-culler"] and "delete:servers" in role["scopes"]
