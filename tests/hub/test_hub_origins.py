"""One origin per user and for the grading service, without a hub: the names the hub gives each user's server and
formgrader (``Layout``, ``--domain``), what the hub's config says about them, and formgrader's server that starts no
kernel. The live attack (a student's page in the instructor's browser) is tests/hub/live/test_hub_origins.py."""
from __future__ import annotations

import asyncio
from argparse import Namespace

import pytest

from autograder.hub import command, server
from autograder.hub.layout import Layout


def test_each_user_and_formgrader_have_a_name_of_their_own():
    layout = Layout.for_course(namespace="hubor", port=18200, ip="127.0.0.1")
    assert layout.url == "http://hub.localhost:18200"
    assert layout.user_url("hubor-student1") == "http://hubor-student1.hub.localhost:18200/user/hubor-student1"
    assert layout.formgrader_url == "http://hubor--service.hub.localhost:18200/services/hubor/formgrader"
    odd = layout.user_url("kim_mj")                        # not a DNS label: JupyterHub's escaped name
    assert odd.endswith(".hub.localhost:18200/user/kim_mj") and "_" not in odd.split("//")[1].split(".")[0]
    named = Layout(course_id="c", port=443, domain="hub.example.edu", ssl_cert=layout.state, ssl_key=layout.state)
    assert named.url == "https://hub.example.edu" and named.user_url("u1") == "https://u1.hub.example.edu/user/u1"


def test_a_hub_others_reach_needs_a_name(capsys):
    """Without --ip 127.0.0.1 the hub needs --domain (each user's origin is a name below it): refused with what to
    give; a name that is no DNS name is refused too; on 127.0.0.1 the hub is hub.localhost."""
    args = dict(namespace="hubor", port=18200, stop=False, students=1, roster=None, ssl_cert=None, ssl_key=None)
    assert command.main(Namespace(**args, ip="", domain=None)) == 2
    assert "needs a name: give --domain" in capsys.readouterr().err
    assert command.main(Namespace(**args, ip="", domain="not a name")) == 2
    assert "is not a DNS name" in capsys.readouterr().err
    assert command.domain_of("Hub.Example.EDU.", "") == "hub.example.edu" and command.domain_of(None, "127.0.0.1") == ""


def test_the_config_gives_each_an_origin_reads_no_user_config_and_starts_formgrader_without_kernels(tmp_path):
    layout = Layout.for_course(namespace="hubor", port=18200, ip="127.0.0.1")
    c = server.load_config(server.Start.of(layout, ["hubor-student1"]), tmp_path)
    assert c.JupyterHub.subdomain_host == "http://hub.localhost:18200" and c.Spawner.disable_user_config is True
    formgrader = next(s for s in c.JupyterHub.services if s["name"] == "hubor")
    command_line = formgrader["command"]
    assert "user" not in formgrader and command_line[1:4] == ["-I", "-m", "autograder.hub.formgrader_server"]
    assert command_line[command_line.index("--user") + 1] == layout.grader
    assert "--ServerApp.kernel_manager_class=autograder.hub.formgrader_server.NoKernels" in command_line
    assert "--ServerApp.terminals_enabled=False" in command_line
    assert formgrader["environment"]["JUPYTERHUB_DISABLE_USER_CONFIG"] == "1"


def test_formgraders_server_starts_and_lists_no_kernel():
    from tornado import web

    from autograder.hub.formgrader_server import NoKernels, NoKernelSpecs

    with pytest.raises(web.HTTPError) as refused:
        asyncio.run(NoKernels().start_kernel(kernel_name="python3"))
    assert refused.value.status_code == 403
    assert NoKernelSpecs().find_kernel_specs() == {} and NoKernelSpecs().get_all_specs() == {}
