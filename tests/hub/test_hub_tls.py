"""The hub over HTTPS (``python -m autograder hub --ssl-cert PEM --ssl-key PEM``), without starting a hub: the
generated config serves TLS with the certificate and key (JupyterHub's ``ssl_cert``/``ssl_key``, which its proxy
serves), the start-up check speaks TLS to it (against a real TLS server here), and a key that other users could read
is refused before anything is set up."""
from __future__ import annotations

import http.server
import os
import shutil
import ssl
import subprocess
import threading
from argparse import Namespace
from pathlib import Path

import pytest

from autograder.hub import command, server
from autograder.hub.layout import Layout


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (0600)."""
    if not shutil.which("openssl"):
        pytest.skip("openssl is missing")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "hub.pem", folder / "hub.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=hub",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    os.chmod(key, 0o600)
    return cert, key


def tls_layout(cert: Path, key: Path, port: int = 18900) -> Layout:
    return Layout(course_id="hubopstls", port=port, ip="127.0.0.1", ssl_cert=cert, ssl_key=key,
                  state=Path("/nonexistent/state"), env=Path("/nonexistent/env"))


def test_the_config_serves_tls_with_the_certificate_and_key(certificate, tmp_path):
    cert, key = certificate
    layout = tls_layout(cert, key)
    c = server.load_config(server.Start.of(layout, ["s1"]), tmp_path)
    assert c.JupyterHub.bind_url == "https://127.0.0.1:18900" and layout.url == "https://hub.localhost:18900"
    assert c.JupyterHub.subdomain_host == layout.url
    assert (c.JupyterHub.ssl_cert, c.JupyterHub.ssl_key) == (str(cert), str(key))
    plain = Layout(course_id="hubopstls", port=18900, ip="127.0.0.1")
    c = server.load_config(server.Start.of(plain, ["s1"]), tmp_path)
    assert c.JupyterHub.bind_url == "http://127.0.0.1:18900" and "ssl_cert" not in c.JupyterHub


def test_the_start_up_check_speaks_tls_to_the_hub(certificate):
    """A TLS server with the same certificate answers /hub/api/ as JupyterHub does: the check returns."""
    cert, key = certificate

    class Api(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/hub/api/" else 404)
            self.end_headers()
            self.wfile.write(b'{"version": "5.5.4"}')

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Api)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        layout = tls_layout(cert, key, port=httpd.server_address[1])
        hub = subprocess.Popen(["sleep", "60"])                          # stands in for jupyterhub's process
        server.wait_until_up(layout, hub, timeout=20)                      # returns: it answered over TLS
        plain = Layout(course_id="hubopstls", port=httpd.server_address[1], ip="127.0.0.1",
                       state=Path("/nonexistent/state"))
        with pytest.raises(RuntimeError, match="did not answer"):          # plain HTTP gets no answer from it
            server.wait_until_up(plain, hub, timeout=3)
        assert hub.wait(timeout=30) is not None                            # which stops the process
    finally:
        httpd.shutdown()


def test_a_key_other_users_can_read_is_refused(certificate, tmp_path):
    cert, key = certificate
    assert command.tls_problem(tls_layout(cert, key)) is None                # root's, 0600: served
    shared = tmp_path / "shared.key"
    shutil.copy(key, shared)
    os.chmod(shared, 0o644)                                                    # a student could read it
    assert "other users may read or change it" in command.tls_problem(tls_layout(cert, shared))
    other = tmp_path / "other.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=x",
                    "-keyout", str(tmp_path / "other.key"), "-out", str(other)], check=True, capture_output=True)
    assert "do not load together" in command.tls_problem(tls_layout(other, key))


def test_the_command_refuses_half_a_tls_setting(capsys):
    args = Namespace(namespace="hubopstls", port=18900, ip="127.0.0.1", stop=False, students=1, roster=None,
                     ssl_cert="/etc/ssl/hub.pem", ssl_key=None)
    assert command.main(args) == 2
    assert "both --ssl-cert and --ssl-key" in capsys.readouterr().err
