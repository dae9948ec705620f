"""nginx in front of N replicas on loopback, for the replica tests: an ``upstream`` in
plain round-robin (no affinity), HTTP/1.1 to the replicas, no buffering (SSE answers
stream through), every file (logs, temp paths, pid) inside one temporary directory.

Each proxied request is logged to ``access.log`` as ``UPSTREAM STATUS METHOD NAME``
(the upstream that answered, and the request's ``Mcp-Method``/``Mcp-Name`` headers), so
a test can say which replica answered which round; an answer's ``X-Upstream`` header
names it too, before its stream ends.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import attrs
import pytest
from peers import free_port
from replica_service import stop_by_pid

NGINX = "/usr/sbin/nginx"
#: Seconds nginx has to start listening (or to stop) before the test fails.
START_TIMEOUT = 15.0

_CONF = """\
{user}worker_processes 1;
error_log {tmp}/error.log warn;
pid {tmp}/nginx.pid;
events {{ worker_connections 256; }}
http {{
    log_format upstreams '$upstream_addr $status $http_mcp_method $http_mcp_name';
    access_log {tmp}/access.log upstreams;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    upstream replicas {{
{servers}
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_request_buffering {request_buffering};
            proxy_cache off;
            proxy_connect_timeout 5s;
            proxy_send_timeout 120s;
            proxy_read_timeout 120s;
            # Which replica answers, known while a stream is still open.
            add_header X-Upstream $upstream_addr always;
{location_extra}        }}
    }}
}}
"""


def nginx_binary() -> str:
    """nginx's path; skips the test, in one line, when it is not installed."""
    found = NGINX if os.access(NGINX, os.X_OK) else shutil.which("nginx")
    if found is None:
        pytest.skip("nginx is not installed: apt-get install nginx")
    return found


@attrs.frozen
class Nginx:
    """A running nginx: its URL base (``http://127.0.0.1:PORT``) and its directory."""

    port: int
    directory: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def upstreams(
        self,
        method: str | None = None,
        name: str | None = None,
        *,
        status: int | None = None,
        count: int | None = None,
    ) -> list[str]:
        """The upstream (``127.0.0.1:PORT``) of each proxied request so far, in the order
        they ended, of those whose ``Mcp-Method`` (and ``Mcp-Name``, and HTTP status)
        match when given.  nginx logs a request just after its client has the answer:
        ``count`` waits (at most ``START_TIMEOUT`` s) until that many are logged."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            found = self._logged(method, name, status)
            if count is None or len(found) >= count:
                return found
            if time.monotonic() > deadline:
                pytest.fail(f"nginx logged {found} of {count} {method} {name} {status}")
            time.sleep(0.01)

    def _logged(self, method: str | None, name: str | None, status: int | None) -> list[str]:
        found = []
        for line in (self.directory / "access.log").read_text().splitlines():
            upstream, logged_status, logged_method, logged_name = line.split(" ", 3)
            if method is not None and logged_method != method:
                continue
            if name is not None and logged_name != name:
                continue
            if status is not None and logged_status != str(status):
                continue
            found.append(upstream)
        return found


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def nginx_in_front(
    replica_ports: Sequence[int],
    directory: Path,
    *,
    location_extra: str = "",
    request_buffering: bool = False,
) -> Iterator[Nginx]:
    """nginx on a free loopback port, round-robin over ``replica_ports``; stopped (by its
    pid) after the block.  ``location_extra``: more directives for the proxying location,
    one a line; ``request_buffering``: nginx reads a request's body whole before it
    passes it on (off by default: streamed)."""
    binary = nginx_binary()
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=0;" for p in replica_ports)
    # As root, nginx would run its worker as nobody, who cannot use a private tmp dir.
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = directory / "nginx.conf"
    extra = "".join(f"            {line}\n" for line in location_extra.splitlines())
    conf.write_text(
        _CONF.format(
            user=user,
            tmp=directory,
            servers=servers,
            port=port,
            location_extra=extra,
            request_buffering="on" if request_buffering else "off",
        )
    )
    log = directory / "error.log"
    process = subprocess.Popen(
        [binary, "-p", str(directory), "-c", str(conf), "-e", str(log), "-g", "daemon off;"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _listening(port):
            if process.poll() is not None:
                pytest.fail(f"nginx exited with {process.returncode}:\n{_tail(log)}")
            if time.monotonic() > deadline:
                pytest.fail(f"nginx did not listen on {port} in {START_TIMEOUT} s:\n{_tail(log)}")
            time.sleep(0.02)
        yield Nginx(port, directory)
    finally:
        # SIGQUIT: nginx's graceful stop.
        stop_by_pid(process, signal.SIGQUIT, START_TIMEOUT)


def _tail(path: Path) -> str:
    return path.read_text()[-2000:] if path.exists() else "(no error log)"
