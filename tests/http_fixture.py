"""A real HTTP server on 127.0.0.1 that serves a fixture tree and misbehaves on cue.

Tests talk to it through the same ``requests`` stack production uses, so what they
exercise is the real wire: status lines, headers, dropped sockets, short bodies.

    with LoopbackServer({"/o/r/main/src/pkg/__init__.py": b""}) as server:
        server.script("/o/r/main/src/pkg/x.py", [Status(429, {"Retry-After": "2"}), Status(200)])
        ...  # point the client at server.url
        assert server.hits("/o/r/main/src/pkg/x.py") == 2

A scripted path plays its responses in order, one per request; after the script runs
out (or for an unscripted path) the tree answers: 200 with the file, or 404.

It also answers GitHub's commits endpoint as GitHub does, ``/repos/<owner>/<repo>/commits/
<ref>`` with ``Accept: application/vnd.github.sha``: the commit a ref names (set with
:meth:`LoopbackServer.point`, else a stable made-up id for any ref the tree has files
under), 422 for a ref it does not know. Raw files of a ref are served at its made-up
commit too, and recorded (and scripted) under the ref's path, so a test written against
``main`` paths holds when the client reads main at its commit.
"""

from __future__ import annotations

import hashlib
import re
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

__all__ = [
    "HTML_PAGE",
    "Hang",
    "Html",
    "LoopbackServer",
    "Recorded",
    "Reset",
    "Response",
    "ShortBody",
    "Status",
    "Trickle",
    "self_signed",
]

HTML_PAGE = b"<!DOCTYPE html>\n<html><body>Please log in to the network.</body></html>\n"


@dataclass(frozen=True)
class Status:
    """Answer ``code`` with ``headers``; ``body`` None means the tree's file (or a stock text)."""

    code: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None


@dataclass(frozen=True)
class Reset:
    """Read the request, then drop the connection with a TCP reset and no answer."""


@dataclass(frozen=True)
class ShortBody:
    """Announce the file's full Content-Length, send all but ``missing`` bytes, hang up."""

    missing: int = 1


@dataclass(frozen=True)
class Trickle:
    """Serve the file ``chunk`` bytes at a time with ``delay`` seconds between chunks."""

    delay: float = 0.05
    chunk: int = 1


@dataclass(frozen=True)
class Hang:
    """Read the request, then say nothing for ``seconds`` (a stalled proxy), then hang up."""

    seconds: float = 1.0


@dataclass(frozen=True)
class Html:
    """Answer 200 with an HTML page, as a captive portal does."""

    content_type: str = "text/html; charset=utf-8"
    body: bytes = HTML_PAGE


Response = Status | Reset | ShortBody | Trickle | Hang | Html


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it; header names are lower-cased. ``path`` is the
    ref's path where a made-up commit was asked for; ``requested`` is what was asked."""

    method: str
    path: str
    headers: Mapping[str, str]
    requested: str = ""


SHA_MEDIA_TYPE = "application/vnd.github.sha"
_COMMITS = re.compile(r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<ref>[^/]+)")


class LoopbackServer:
    """Threaded HTTP/1.1 server on an ephemeral loopback port. Use as a context manager."""

    def __init__(
        self, files: Mapping[str, bytes] | None = None, *, tls: tuple[Path, Path] | None = None
    ) -> None:
        self.files: dict[str, bytes] = dict(files or {})
        self.tls = tls  # (certificate, key): serve https
        self.requests: list[Recorded] = []
        self._scripts: dict[str, list[Response]] = {}
        self._pointed: dict[tuple[str, str], str] = {}  # (owner/repo, ref) -> commit
        self._made_up: dict[tuple[str, str], str] = {}  # (owner/repo, commit) -> ref
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> LoopbackServer:
        handler = type("_BoundHandler", (_Handler,), {"fixture": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        # A port can be reused by a later server: what an earlier test taught the run
        # about a dead host at this address must not leak into this one.
        from canary.sources.github import HOSTS

        HOSTS.answered(self.url.split("://", 1)[1])
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    # -- setup and inspection -------------------------------------------------------

    def add(self, path: str, body: bytes) -> None:
        with self._lock:
            self.files[path] = body

    def point(self, repo: str, ref: str, commit: str) -> None:
        """Make ``ref`` of ``repo`` name ``commit`` (serve its files at ``/<repo>/<commit>/``)."""
        with self._lock:
            self._pointed[(repo, ref)] = commit
            if not any(path.startswith(f"/{repo}/{commit}/") for path in self.files):
                self._made_up[(repo, commit)] = ref

    def commit_of(self, repo: str, ref: str) -> str | None:
        """What the commits endpoint answers for ``ref`` now."""
        with self._lock:
            if (repo, ref) in self._pointed:
                return self._pointed[(repo, ref)]
            if not any(path.startswith(f"/{repo}/{ref}/") for path in self.files):
                return None
            if re.fullmatch(r"[0-9a-f]{40}", ref):
                return ref
            commit = hashlib.sha1(f"{repo}@{ref}".encode()).hexdigest()
            self._made_up[(repo, commit)] = ref
            return commit

    def _canonical(self, path: str) -> str:
        """A raw path at a made-up commit, as the path at its ref."""
        parts = path.split("/", 4)  # "", owner, repo, ref, rest
        if len(parts) == 5:
            with self._lock:
                ref = self._made_up.get((f"{parts[1]}/{parts[2]}", parts[3]))
            if ref is not None:
                return "/".join([*parts[:3], ref, parts[4]])
        return path

    def script(self, path: str, responses: Iterable[Response]) -> None:
        """Queue ``responses`` for ``path``, played one per request before the tree answers."""
        with self._lock:
            self._scripts.setdefault(path, []).extend(responses)

    def hits(self, path: str | None = None) -> int:
        """How many requests reached ``path`` (all paths when None)."""
        with self._lock:
            return sum(1 for r in self.requests if path is None or r.path == path)

    def requests_for(self, path: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def _next(self, recorded: Recorded) -> tuple[Response, bytes | None]:
        with self._lock:
            self.requests.append(recorded)
            queue = self._scripts.get(recorded.path)
            response: Response | None = queue.pop(0) if queue else None
            file = self.files.get(recorded.path)
        if response is None and (match := _COMMITS.fullmatch(recorded.path)):
            response, file = self._commits_answer(match["repo"], match["ref"], recorded)
        if response is None:
            response = Status(200) if file is not None else Status(404)
        return response, file

    def _commits_answer(self, repo: str, ref: str, recorded: Recorded) -> tuple[Response, None]:
        commit = self.commit_of(repo, ref)
        with self._lock:
            known = any(p.startswith(f"/{repo}/") for p in self.files) or any(
                r == repo for r, _ in self._pointed
            )
        if commit is None and not known:  # GitHub's answer for a repository it has not
            return Status(404, body=b'{"message": "Not Found"}'), None
        if commit is None:
            return Status(
                422, body=b'{"message": "No commit found for SHA: %s"}' % ref.encode()
            ), None
        if recorded.headers.get("accept") != SHA_MEDIA_TYPE:  # GitHub answers JSON then
            return Status(
                200, {"Content-Type": "application/json"}, b'{"sha": "%s"}' % commit.encode()
            ), None
        return Status(200, body=commit.encode()), None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 drops SYNs when a client opens 8+ connections at once,
    # and the kernel's 1 s SYN retry then shows up as a mystery stall in tests.
    request_queue_size = 128

    def handle_error(self, request: object, client_address: object) -> None:
        # Clients hang up mid-answer on purpose here (timeouts, closed sessions); only
        # a genuine bug in the fixture is worth a traceback.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    fixture: LoopbackServer
    protocol_version = "HTTP/1.1"  # keep-alive, as the real host does
    timeout = 5  # a client that holds a connection open must not pin a thread forever

    def do_GET(self) -> None:
        requested = self.path.split("?", 1)[0]
        path = self.fixture._canonical(requested)
        headers = {k.lower(): v for k, v in self.headers.items()}
        response, file = self.fixture._next(Recorded("GET", path, headers, requested))
        if isinstance(response, Status):
            self._status(response, file)
        elif isinstance(response, Reset):
            self._reset()
        elif isinstance(response, ShortBody):
            body = file if file is not None else b"x" * 64
            self._head(200, len(body), "text/plain; charset=utf-8")
            self.wfile.write(body[: max(len(body) - response.missing, 0)])
            self.wfile.flush()
            self.close_connection = True
        elif isinstance(response, Trickle):
            body = file if file is not None else b"x" * 64
            self._head(200, len(body), "text/plain; charset=utf-8")
            for start in range(0, len(body), response.chunk):
                self.wfile.write(body[start : start + response.chunk])
                self.wfile.flush()
                time.sleep(response.delay)
        elif isinstance(response, Hang):
            time.sleep(response.seconds)
            self.close_connection = True
        elif isinstance(response, Html):
            self._head(200, len(response.body), response.content_type)
            self.wfile.write(response.body)
        else:  # pragma: no cover - a typo in a test's script
            raise TypeError(f"unknown scripted response {response!r}")

    def _status(self, response: Status, file: bytes | None) -> None:
        if response.body is not None:
            body = response.body
        elif response.code == 200:
            body = file if file is not None else b""
        else:
            body = f"{response.code}: {self.responses.get(response.code, ('',))[0]}\n".encode()
        extra = {k.lower() for k in response.headers}
        self.send_response(response.code)
        for name, value in response.headers.items():
            self.send_header(name, value)
        if "content-type" not in extra:
            self.send_header("Content-Type", "text/plain; charset=utf-8")
        if "content-length" not in extra:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _head(self, code: int, length: int, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        self.wfile.flush()

    def _reset(self) -> None:
        # SO_LINGER with a zero timeout makes close() send RST instead of FIN: the
        # client sees "connection reset by peer", as behind a flaky middlebox.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output clean; the recorded requests say what happened


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made by openssl in ``folder`` (a client
    trusts it through ``REQUESTS_CA_BUNDLE``)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key
