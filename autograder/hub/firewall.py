"""No TCP between the hub's users: an owner-match firewall (iptables' ``owner``, ``addrtype`` and ``connlimit``
matches), set up by the hub command (root) before the hub starts and removed when it stops.

Every process of the hub's users (students, instructors, the grading account) runs under their own uid; the kernel
knows the uid of every socket it sends from. In the filter table's OUTPUT chain, a chain of this hub's own
(``ag-<course id>``) looks at each new connection of those uids:

* to an address of this machine (``addrtype LOCAL``: 127.0.0.0/8, ::1 and the machine's own addresses) only the
  hub's port (the proxy), the hub's API and the exchange are reachable, and DNS (port 53, which only root can
  listen on); anything else is refused (a TCP reset): another user's JupyterLab, kernel or listener, the
  formgrader service, the proxy's API, whatever another user listens on. The proxy, the hub and root reach the
  users' servers as before (their own uid is not in the chain), and the replies of a user's server are not new
  connections;
* at most ``connections_per_user`` TCP connections at once, anywhere (``connlimit`` per uid): a student cannot hold
  thousands of silent connections open at the proxy, the hub's API or the exchange.

IPv4 and IPv6 alike (``iptables`` and ``ip6tables``; the hub's API and the exchange listen on 127.0.0.1 only, so over
IPv6 only the proxy's port is reachable, and only where the proxy listens there). Other hosts are not this chain's
business (a student's ``pip install`` still works). Unix sockets are not TCP: kernels use IPC sockets in their
owner's private folders (``KernelManager.transport = ipc``; the IOPub pipe of ipykernel by the course's file patch,
``autograder/patches``).
"""
from __future__ import annotations

import shutil
import subprocess

from autograder.hub.layout import Layout

TOOLS = ("iptables", "ip6tables")
DNS_PORT = 53


class Unavailable(RuntimeError):
    """The firewall cannot be set up here (the reason says why)."""


def chain(layout: Layout) -> str:
    return f"ag-{layout.course_id}"                       # at most 19 characters (iptables allows 28)


def local_chain(layout: Layout) -> str:
    return f"{chain(layout)}-local"


def allowed_ports(layout: Layout, ipv6: bool = False) -> list[int]:
    """The ports of this machine that the hub's users may connect to (the proxy's over IPv6 only where it listens
    on every address or an IPv6 one)."""
    if ipv6:
        return [layout.port] if (not layout.ip or ":" in layout.ip) else []
    return [layout.port, layout.hub_port, layout.exchange_port]


def rules(layout: Layout, uids: list[int], per_user: int, ipv6: bool = False) -> dict[str, list[list[str]]]:
    """The two chains' rules (``iptables -A <chain>`` arguments), per chain."""
    reject_tcp = ["-j", "REJECT", "--reject-with", "tcp-reset"]
    main = []
    for uid in sorted(set(uids)):
        owner = ["-m", "owner", "--uid-owner", str(uid)]
        if per_user:
            main.append(["-p", "tcp", "--syn", *owner, "-m", "connlimit", "--connlimit-above", str(per_user),
                         "--connlimit-mask", "0", *reject_tcp])
        main.append(["-m", "conntrack", "--ctstate", "NEW", *owner, "-m", "addrtype", "--dst-type", "LOCAL",
                     "-j", local_chain(layout)])
    ports = allowed_ports(layout, ipv6)
    local = [["-p", "tcp", "-m", "multiport", "--dports", ",".join(map(str, ports)), "-j", "RETURN"]] if ports else []
    local += [["-p", "udp", "--dport", str(DNS_PORT), "-j", "RETURN"],
              ["-p", "tcp", "--dport", str(DNS_PORT), "-j", "RETURN"],
              ["-p", "tcp", *reject_tcp],
              ["-j", "REJECT"]]
    return {chain(layout): main, local_chain(layout): local}


def _run(tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([tool, "-w", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise Unavailable(f"{tool} {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")
    return proc


def check() -> None:
    """Raise ``Unavailable`` unless both tools are installed (the hub command refuses to start then)."""
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        raise Unavailable(f"{', '.join(missing)} not found (Debian: apt-get install iptables)")


def apply(layout: Layout, uids: list[int], per_user: int) -> None:
    """This hub's chains (re)made with ``uids``' rules, and jumped to first from OUTPUT (idempotent)."""
    check()
    for tool in TOOLS:
        made = rules(layout, uids, per_user, ipv6=tool == "ip6tables")
        for name in (local_chain(layout), chain(layout)):
            if _run(tool, "-n", "-L", name, check=False).returncode != 0:
                _run(tool, "-N", name)
            _run(tool, "-F", name)
            for rule in made[name]:
                _run(tool, "-A", name, *rule)
        if _run(tool, "-C", "OUTPUT", "-j", chain(layout), check=False).returncode != 0:
            _run(tool, "-I", "OUTPUT", "1", "-j", chain(layout))


def remove(layout: Layout) -> None:
    """This hub's chains gone (nothing where they never were or the tools are missing)."""
    for tool in TOOLS:
        if not shutil.which(tool):
            continue
        while _run(tool, "-D", "OUTPUT", "-j", chain(layout), check=False).returncode == 0:
            pass
        for name in (chain(layout), local_chain(layout)):
            _run(tool, "-F", name, check=False)
            _run(tool, "-X", name, check=False)


def installed(layout: Layout) -> dict[str, str]:
    """Each tool's listing of this hub's chains (``iptables -S``), where they exist."""
    found = {}
    for tool in TOOLS:
        if shutil.which(tool):
            listing = [_run(tool, "-S", name, check=False).stdout for name in (chain(layout), local_chain(layout))]
            if any(listing):
                found[tool] = "".join(listing)
    return found
