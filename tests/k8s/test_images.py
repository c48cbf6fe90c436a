"""The grading image builds from the bundle, as its README says (podman: ``podman build --isolation chroot`` needs no
daemon and no control groups of its own; Debian's ``podman`` and ``mmdebstrap``).

What stands in for what this machine cannot reach, each as close to the real one as it can be:

* the Dockerfiles' base, ``python:3.11.14-slim-bookworm``, is on Docker Hub: a Debian 12 with Python 3.11 made by
  ``mmdebstrap`` from Debian's archive is given as ``--build-arg BASE``;
* torch's CPU index (download.pytorch.org): an index of the same CPU wheel from this machine's disk is given as
  ``--build-arg TORCH_INDEX_URL``; every other package comes from PyPI, as on a real build;
* this machine reaches PyPI through a proxy with its own certificate authority: pip in the build is given that
  certificate (a pip.conf bound for the build only; the Dockerfile is unchanged).

It costs a quarter of an hour (measured: the build 902 s, the test 21 min with the base image, on 2 cores shared
with other work) and a few GB of disk and downloads, more than the whole suite's margin, so it runs only where
``AUTOGRADER_BUILD_IMAGES=1`` asks for it (docs/admin/kubernetes.md); it is marked ``slow`` too.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder import cli

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("AUTOGRADER_BUILD_IMAGES") != "1",
                                 reason="builds an image for minutes: AUTOGRADER_BUILD_IMAGES=1 runs it")]

TAG = "localhost/attention-ko-test"
CA = Path("/etc/ssl/certs/ca-certificates.crt")
WHEELS = Path("/opt/wheels")


def podman(*args, timeout=1800, **options) -> subprocess.CompletedProcess:
    # this machine's hard limits are below podman's defaults, and it may not raise them
    limits = ["--ulimit", f"nofile={os.sysconf('SC_OPEN_MAX')}:{os.sysconf('SC_OPEN_MAX')}"] if args[0] == "build" \
        else []
    return subprocess.run(["podman", args[0], *limits, *args[1:]], capture_output=True, text=True,
                          timeout=timeout, **options)


@pytest.fixture(scope="module")
def base_image(tmp_path_factory) -> str:
    for tool in ("podman", "mmdebstrap"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (apt-get install podman mmdebstrap)")
    tag = f"{TAG}-base:bookworm"
    if podman("image", "exists", tag).returncode != 0:
        tar = tmp_path_factory.mktemp("base") / "rootfs.tar"
        made = subprocess.run(["mmdebstrap", "--variant=minbase", "--include=python3,python3-venv,python-is-python3,"
                               "ca-certificates", "bookworm", str(tar), "http://deb.debian.org/debian"],
                              capture_output=True, text=True, timeout=900)
        assert made.returncode == 0, made.stderr[-3000:]
        imported = podman("import", str(tar), tag)
        assert imported.returncode == 0, imported.stderr
    return tag


def torch_index(folder: Path) -> list[str]:
    """A PEP 503 index of this machine's torch CPU wheel, and the build's bind mounts that serve it."""
    wheels = sorted(WHEELS.glob("torch-*+cpu-*.whl"))
    if not wheels:
        pytest.skip("no torch CPU wheel on this machine's disk")
    (folder / "simple" / "torch").mkdir(parents=True)
    (folder / "simple" / "torch" / "index.html").write_text(
        f'<a href="file:///torchwheels/{wheels[0].name}">{wheels[0].name}</a>\n', encoding="utf-8")
    return ["--build-arg", "TORCH_INDEX_URL=file:///torchindex/simple", "-v", f"{folder}:/torchindex:ro",
            "-v", f"{WHEELS}:/torchwheels:ro"]


def test_the_grading_image_builds_as_the_readme_says(base_image, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("username,role\nkimmj,student\nparkprof,instructor\n", encoding="utf-8")
    out = tmp_path / "bundle"
    assert cli.main(["k8s", "--out", str(out), "--roster", str(roster), "--registry", "localhost/attention-ko"]) == 0
    readme = (out / "README.md").read_text(encoding="utf-8")
    (cd,) = [line.strip()[3:] for line in readme.splitlines() if line.strip().startswith("cd ")]
    (build,) = [line.split() for line in readme.splitlines() if line.strip().startswith("docker build")
                and "grader.Dockerfile" in line]
    pip_conf = tmp_path / "pip.conf"
    pip_conf.write_text("[global]\ncert = /etc/host-ca.crt\n", encoding="utf-8")
    extra = ["--isolation", "chroot", "--build-arg", f"BASE={base_image}", *torch_index(tmp_path / "index"),
             "-v", f"{pip_conf}:/etc/pip.conf:ro", "-v", f"{CA}:/etc/host-ca.crt:ro"]
    started = time.perf_counter()
    built = podman("build", *extra, *build[2:], cwd=cd)       # the README's command, from where it says
    seconds = time.perf_counter() - started
    print(f"\ngrading image built in {seconds:.0f} s", file=sys.stderr)
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-2000:]
    tag = build[build.index("-t") + 1]
    # what is in it, checked by a build on top of it (this machine's podman cannot run containers: no cgroup v2)
    check = tmp_path / "Check.Dockerfile"
    check.write_text(f"""FROM {tag}
RUN test ! -e /opt/course/.git && test ! -e /opt/course/demo && test ! -e /opt/course/build \\
 && test -x /opt/course/.venv/bin/python && test -e /opt/course/source && command -v bwrap \\
 && python -c "import sys, torch, keras, autograder; sys.exit(torch.version.cuda is not None)" \\
 && ! python -m pip list 2>/dev/null | grep -i '^nvidia' \\
 && python -m autograder grade --help > /dev/null && test "$(id -u)" = 1100
""", encoding="utf-8")
    checked = podman("build", "--isolation", "chroot", "-f", str(check), "-t", f"{TAG}-check", str(tmp_path))
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    size = podman("image", "inspect", "--format", "{{.Size}}", tag).stdout.strip()
    print(f"grading image: {int(size) / 2**30:.2f} GiB", file=sys.stderr)
    for image in (f"{TAG}-check", tag):
        podman("rmi", "-f", image)
