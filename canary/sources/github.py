"""Upstream files read from GitHub raw: ``<base>/<owner>/<repo>/<ref>/<package_dir>/<path>``.

A branch (``main``) moves while a run reads it, so :meth:`GitHubSource.pin` first asks
GitHub's commits endpoint (``<api>/repos/<owner>/<repo>/commits/<ref>`` with ``Accept:
application/vnd.github.sha``) which commit the branch names now, and every file is then
read at that commit: one tree per run, as immutable as a release, and replayable.

Raw GitHub answers 404 both for a file missing at a ref and for a ref that does not
exist at all. The two mean very different things to a check (a file dropped upstream
vs. a typo in tags.toml), so the first 404 at a ref is followed by a probe of a file
every ref has: ``<package_dir>/<package>/__init__.py``.

Everything else that is not a clean 200 or 404 is retried (429, 5xx, dropped or cut
short connections) or raised as :class:`~canary.errors.FetchError`; a file that could
not be fetched is never reported as absent.
"""

from __future__ import annotations

import email.utils
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from urllib.parse import quote, urlsplit

import requests
import requests.adapters
import requests.auth

from canary.errors import FetchError, RefNotFound
from canary.sources.health import HostHealth
from canary.sources.version import repo_relative
from canary.versions import is_commit

__all__ = ["DEFAULT_API_URL", "DEFAULT_BASE_URL", "GitHubSource"]

DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
BASE_URL_ENV = "CANARY_GITHUB_RAW_URL"
DEFAULT_API_URL = "https://api.github.com"
API_URL_ENV = "CANARY_GITHUB_API_URL"
_SHA_MEDIA_TYPE = "application/vnd.github.sha"
TOKEN_ENV = "GITHUB_TOKEN"
# The token goes to GitHub's own hosts over https; to a mirror only when this is "1", and
# then over https only: a mirror is someone else's server.
MIRROR_TOKEN_ENV = "CANARY_GITHUB_TOKEN_FOR_MIRRORS"
GITHUB_HOSTS = frozenset({"github.com", "api.github.com", "raw.githubusercontent.com"})

# A server asking for more than this is treated as asking for this: a canary run that
# stalls for an hour on one Retry-After is worse than one that fails and says why.
MAX_RETRY_AFTER = 60.0
MAX_BACKOFF = 60.0
# Read when a source is made, so a test (or an embedding tool) can make retries fast.
DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 5
DEFAULT_BACKOFF = 1.0

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_RETRY_AFTER_STATUSES = frozenset({429, 503})
_RETRY_EXCEPTIONS = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
    requests.exceptions.ContentDecodingError,
)
_CHUNK = 64 * 1024


def token_goes_to(url: str, *, mirrors: bool) -> bool:
    """Whether the token may go with a request to ``url``: https only, to GitHub's own
    hosts, or to any host when the user opted in (``mirrors``)."""
    parts = urlsplit(url)
    if parts.scheme != "https":
        return False
    return mirrors or (parts.hostname or "").lower() in GITHUB_HOSTS


class _BearerAuth(requests.auth.AuthBase):
    """Sends the token where :func:`token_goes_to` allows, decided per request (a redirect
    is a request too); passing it as ``auth`` also keeps ``~/.netrc`` from replacing it."""

    def __init__(self, token: str, *, mirrors: bool) -> None:
        self._token = token
        self.mirrors = mirrors

    def sent_to(self, url: str) -> bool:
        return token_goes_to(url, mirrors=self.mirrors)

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        if self.sent_to(request.url or ""):
            request.headers["Authorization"] = f"Bearer {self._token}"
        return request

    def __repr__(self) -> str:
        return "_BearerAuth(<redacted>)"


class _RetryableError(Exception):
    """One attempt failed in a way the next attempt may not; ``delay`` is the server's ask.

    ``unreachable``: no answer at all (refused, reset, timed out); ``server_error``: a
    5xx. Both count towards calling the host down (see :class:`HostHealth`).
    """

    def __init__(
        self,
        reason: str,
        delay: float | None = None,
        *,
        unreachable: bool = False,
        server_error: bool = False,
    ):
        super().__init__(reason)
        self.reason = reason
        self.delay = delay
        self.unreachable = unreachable
        self.server_error = server_error


class _BatchFailed(FetchError):
    """Another file of the same batch failed first: this one was not (or no longer) tried."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: not fetched, another file of its batch failed first")


# One per process: a pytest run (or an xdist worker) is one process.
HOSTS = HostHealth()


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait per a ``Retry-After`` header (delta-seconds or HTTP-date), capped.

    ``None`` when the header is missing or unreadable, so the caller falls back to its
    own backoff rather than trusting garbage.
    """
    if value is None or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            # RFC 9110 dates are GMT; a naive result means the zone was "-0000".
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def backoff_delay(backoff: float, attempt: int) -> float:
    """Exponential backoff before retry number ``attempt`` (0 for the first retry)."""
    return min(backoff * (2**attempt), MAX_BACKOFF)


def _looks_like_html(path: str, content_type: str, body: bytes) -> bool:
    # Captive portals and corporate proxies answer 200 with a login page; parsing that
    # as Python would surface as a baffling ParseError or, worse, a "drift".
    if content_type.split(";", 1)[0].strip().lower() == "text/html" and not path.endswith(
        (".html", ".htm")
    ):
        return True
    if path.endswith((".py", ".pyi")):
        head = body[:512].lstrip().lower()
        return head.startswith((b"<!doctype html", b"<html"))
    return False


def _status_hint(status: int, headers: Mapping[str, str], token: str) -> str:
    """What a refusal means, by whether the token went with the request: ``token`` is
    "sent", "withheld" (set, but not for this host: see :func:`token_goes_to`) or "none"."""
    if token == "withheld" and status in (401, 403):
        return (
            f"{TOKEN_ENV} is set but not sent to this host, which is not GitHub over https; "
            f"set {MIRROR_TOKEN_ENV}=1 to send it to your mirror (https only)"
        )
    sent = token == "sent"
    if status == 403 and headers.get("X-RateLimit-Remaining") == "0":
        if sent:
            return f"rate limited even with {TOKEN_ENV}; wait for the limit to reset"
        return f"rate limited; set {TOKEN_ENV} to raise the limit"
    hints = {
        401: f"the token was rejected; check {TOKEN_ENV}",
        403: f"access denied with {TOKEN_ENV}; can that token read the repository?"
        if sent
        else f"access denied; a private repository needs {TOKEN_ENV}",
    }
    return hints.get(status, "unexpected answer")


class GitHubSource:
    """Files of one package at one git ref, read from GitHub raw.

    ``package_dir`` is where the package sits in the repository (``"src"`` for
    transformers and peft, ``""`` for trl). ``timeout`` limits the connect and each read,
    and is also checked against the whole answer as chunks arrive, so a server that
    trickles bytes just under the read limit still counts as a (retryable) failure.
    ``retries`` is how many times a failed request is tried again. ``sleep`` is
    injectable so tests need not wait; by default a backoff wakes early when another file
    of the batch failed.
    """

    def __init__(
        self,
        package: str,
        repo: str,
        ref: str,
        package_dir: str = "",
        *,
        base_url: str | None = None,
        api_url: str | None = None,
        token: str | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        backoff: float | None = None,
        session: requests.Session | None = None,
        max_workers: int = 8,
        sleep: Callable[[float], None] | None = None,
        hosts: HostHealth | None = None,
    ) -> None:
        timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        retries = DEFAULT_RETRIES if retries is None else retries
        backoff = DEFAULT_BACKOFF if backoff is None else backoff
        if retries < 0:
            raise ValueError(f"retries must be >= 0, not {retries}")
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, not {max_workers}")
        self.package = package
        self.repo = repo
        self.ref = ref
        self.package_dir = package_dir.strip("/")
        self.base_url = (base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
        self.api_url = (api_url or os.environ.get(API_URL_ENV) or DEFAULT_API_URL).rstrip("/")
        # The commit the ref was pinned to (see pin); files are read there once it is set.
        self.commit: str | None = None
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        mirrors = os.environ.get(MIRROR_TOKEN_ENV) == "1"
        self._auth = _BearerAuth(token, mirrors=mirrors) if token else None
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_workers = max_workers
        self._sleep = sleep
        self._hosts = hosts if hosts is not None else HOSTS
        self._owns_session = session is None
        self._session = session if session is not None else self._new_session(max_workers)
        # None: not known yet. Set once, under the lock, so concurrent 404s probe once.
        self._ref_exists: bool | None = None
        self._ref_lock = threading.Lock()

    @staticmethod
    def _new_session(max_workers: int) -> requests.Session:
        session = requests.Session()
        # Without this, workers beyond the default pool of 10 would open and drop
        # connections with a warning on every request.
        adapter = requests.adapters.HTTPAdapter(pool_maxsize=max(max_workers, 10))
        session.mount("https://", adapter)
        session.mount("http://", adapter)
        return session

    @property
    def description(self) -> str:
        via = "" if self.base_url == DEFAULT_BASE_URL else f" via {self.base_url}"
        at = f"@{self.commit[:12]}" if self.commit and self.commit != self.ref else ""
        return f"{self.package} {self.ref}{at} from GitHub ({self.repo}{via})"

    def pin(self, commit: str | None = None) -> str:
        """Read every later file at one commit: ``commit`` when given (another process of
        the run resolved it already), else the commit the ref names now."""
        if commit is None:
            commit = self.resolve_commit()
        if not is_commit(commit):
            raise ValueError(f"not a full commit id: {commit!r}")
        with self._ref_lock:
            self.commit = commit
            self._ref_exists = True  # the commits endpoint just said so
        return commit

    def commit_url(self) -> str:
        return f"{self.api_url}/repos/{self.repo}/commits/{quote(self.ref, safe='')}"

    def resolve_commit(self) -> str:
        """The full commit id the ref names now, from GitHub's commits endpoint."""
        url = self.commit_url()
        answer = self._request(
            url,
            "",
            threading.Event(),
            {"Accept": _SHA_MEDIA_TYPE},
            absent=frozenset({404, 422}),
            setting=API_URL_ENV,
        )
        if answer == 404:  # GitHub's answer for a repository it has not, or hides
            private = (
                f"private and {TOKEN_ENV} cannot read it"
                if self._token_state(url) == "sent"
                else f"private: set {TOKEN_ENV}"
            )
            raise RefNotFound(
                f"no repository {self.repo} at {self.api_url} (or it is {private}); check the "
                f"package's repo in tags.toml",
                cause=f"no repository {self.repo}",
            )
        if not isinstance(answer, bytes):  # 422: the repository has no such ref
            raise RefNotFound(
                f"{self.repo} has no ref {self.ref!r} ({url} found no commit)",
                cause=f"{self.repo} has no ref {self.ref!r}",
            )
        commit = answer.decode("ascii", "replace").strip()
        if not is_commit(commit):
            raise FetchError(
                f"{self.description}: {url} answered {commit[:60]!r}, not a commit id "
                f"(a proxy in the way, or {API_URL_ENV} pointing at something else?)"
            )
        return commit

    def __repr__(self) -> str:
        return (
            f"GitHubSource(package={self.package!r}, repo={self.repo!r}, ref={self.ref!r}, "
            f"package_dir={self.package_dir!r}, base_url={self.base_url!r})"
        )

    def url_for(self, path: str) -> str:
        """The raw URL of an installed-layout ``path`` (or a ``repo:`` path) at this ref."""
        relative = repo_relative(path)
        inside = path if relative is None else relative
        if not inside or inside.startswith("/") or ".." in inside.split("/"):
            raise ValueError(f"not a relative path inside the package: {path!r}")
        if relative is not None or not self.package_dir:
            repo_path = inside
        else:
            repo_path = f"{self.package_dir}/{path}"
        ref = self.commit or self.ref
        return f"{self.base_url}/{self.repo}/{quote(ref, safe='/')}/{quote(repo_path)}"

    def fetch(self, paths: Sequence[str]) -> dict[str, bytes | None]:
        """Each path's bytes, or ``None`` where the file does not exist at this ref.

        Raises :class:`RefNotFound` when the ref does not exist and :class:`FetchError`
        when any file could not be had; no partial result is returned. Once one file
        failed, no other file of the batch starts and those under way stop retrying: the
        batch has failed already.
        """
        unique = list(dict.fromkeys(paths))
        for path in unique:
            self.url_for(path)  # reject bad paths before any request goes out
        failed = threading.Event()
        if len(unique) <= 1 or self.max_workers == 1:
            found = {path: self._fetch_one(path, failed) for path in unique}
            return self._settle_ref(found)
        pool = ThreadPoolExecutor(
            max_workers=min(self.max_workers, len(unique)), thread_name_prefix="canary-github"
        )
        try:
            futures = {pool.submit(self._fetch_one, path, failed): path for path in unique}
            wait(futures, return_when=FIRST_EXCEPTION)
        finally:
            # On failure, do not keep hammering a server that is already unhappy.
            pool.shutdown(wait=True, cancel_futures=True)
        failures = [f.exception() for f in futures if not f.cancelled() and f.exception()]
        if first := next((e for e in failures if not isinstance(e, _BatchFailed)), None):
            raise first
        return self._settle_ref({futures[f]: f.result() for f in futures})

    def close(self) -> None:
        """Close the connection pool, unless the session was the caller's."""
        if self._owns_session:
            self._session.close()

    def _fetch_one(self, path: str, failed: threading.Event) -> bytes | None:
        if failed.is_set():
            raise _BatchFailed(path)
        try:
            return self._get(path, failed)
        except BaseException:
            # Set before this future completes, so the thread's next file sees it.
            failed.set()
            raise

    def _sentinel_path(self) -> str:
        return f"{self.package}/__init__.py"

    def _settle_ref(self, found: dict[str, bytes | None]) -> dict[str, bytes | None]:
        """Decide, once the whole batch has answered, whether its 404s mean absent files
        or a missing ref: any 200 of this ref proves it exists; otherwise the sentinel,
        a file every ref has, decides. Deciding after the batch, not in the thread that
        saw the first 404, is what keeps the answer the same from run to run."""
        with self._ref_lock:
            if any(content is not None for content in found.values()):
                self._ref_exists = True
            if self._ref_exists is None and found:  # nothing but 404s so far
                sentinel = self._sentinel_path()
                if sentinel in found:
                    self._ref_exists = False
                else:
                    # A FetchError here propagates and leaves the answer unknown, so a
                    # later fetch asks again instead of trusting a failed probe.
                    self._ref_exists = self._get(sentinel, threading.Event()) is not None
            if self._ref_exists is False:
                sentinel = self.url_for(self._sentinel_path())
                raise RefNotFound(
                    f"{self.repo} has no ref {self.ref!r}: {sentinel} is 404 too, and every "
                    f"ref of {self.package} has that file",
                    cause=f"{self.repo} has no ref {self.ref!r}",
                )
        return found

    def _get(self, path: str, failed: threading.Event) -> bytes | None:
        """The body at ``path``, ``None`` on 404; retries what may pass on a second try."""
        answer = self._request(self.url_for(path), path, failed)
        return answer if isinstance(answer, bytes) else None

    def _request(
        self,
        url: str,
        path: str,
        failed: threading.Event,
        headers: Mapping[str, str] | None = None,
        *,
        absent: frozenset[int] = frozenset({404}),
        setting: str = BASE_URL_ENV,
    ) -> bytes | int:
        """One GET with the retry policy; ``failed`` set by a sibling stops the retries.
        The body, or the status when it is one of ``absent``; ``setting``: the variable that
        points canary at the host asked (a hint names it)."""
        host = urlsplit(url).netloc
        attempts = self.retries + 1
        for attempt in range(attempts):
            if (down := self._hosts.down_reason(host)) is not None:
                raise FetchError(
                    f"{self.description}: could not fetch {url}: {host} is not answering "
                    f"({down}); not trying it again for every file of this run: check the "
                    f"network, or set {setting} to a reachable mirror"
                )
            if attempt and failed.is_set():
                raise _BatchFailed(path)
            try:
                body = self._attempt(url, path, headers or {}, absent, setting)
            except _RetryableError as failure:
                if failure.unreachable:
                    self._hosts.no_answer(host, failure.reason, threshold=attempts)
                elif failure.server_error:
                    self._hosts.server_error(host, path)
                if attempt + 1 == attempts:
                    if failure.server_error:
                        self._hosts.gave_up(host, failure.reason)
                    raise FetchError(
                        f"{self.description}: could not fetch {url}: {failure.reason} "
                        f"(gave up after {attempts} attempts)"
                    ) from failure
                delay = failure.delay
                self._pause(
                    delay if delay is not None else backoff_delay(self.backoff, attempt), failed
                )
            else:
                self._hosts.answered(host)
                return body
        raise AssertionError("unreachable")  # pragma: no cover

    def _token_state(self, url: str) -> str:
        if self._auth is None:
            return "none"
        return "sent" if self._auth.sent_to(url) else "withheld"

    def _pause(self, seconds: float, failed: threading.Event) -> None:
        if self._sleep is not None:
            self._sleep(seconds)
        else:  # wakes as soon as a sibling fails the batch
            failed.wait(seconds)

    def _attempt(
        self,
        url: str,
        path: str,
        headers: Mapping[str, str],
        absent: frozenset[int],
        setting: str,
    ) -> bytes | int:
        deadline = time.monotonic() + self.timeout
        try:
            with self._session.get(
                url, auth=self._auth, timeout=self.timeout, stream=True, headers=dict(headers)
            ) as response:
                status = response.status_code
                if status in absent:
                    return status
                if status == 403 and "Retry-After" in response.headers:
                    # GitHub's secondary rate limit: wait as asked (capped), then again.
                    wait = response.headers["Retry-After"]
                    raise _RetryableError(
                        f"HTTP 403, GitHub's secondary rate limit (Retry-After: {wait}); "
                        f"run again later, or with fewer --canary-workers",
                        parse_retry_after(wait),
                    )
                if status in _RETRY_STATUSES:
                    delay = None
                    if status in _RETRY_AFTER_STATUSES:
                        delay = parse_retry_after(response.headers.get("Retry-After"))
                    raise _RetryableError(f"HTTP {status}", delay, server_error=status >= 500)
                if status != 200:
                    hint = _status_hint(status, response.headers, self._token_state(url))
                    raise FetchError(
                        f"{self.description}: could not fetch {url}: HTTP {status} ({hint})"
                    )
                body = _read_body(response, deadline, self.timeout)
                content_type = response.headers.get("Content-Type", "")
        except requests.exceptions.SSLError as exc:
            # A certificate problem will not fix itself between attempts.
            raise FetchError(f"{self.description}: could not fetch {url}: {exc}") from exc
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise _RetryableError(f"{type(exc).__name__}: {exc}", unreachable=True) from exc
        except _RETRY_EXCEPTIONS as exc:
            raise _RetryableError(f"{type(exc).__name__}: {exc}") from exc
        except requests.RequestException as exc:
            raise FetchError(f"{self.description}: could not fetch {url}: {exc}") from exc
        if _looks_like_html(path, content_type, body):
            raise FetchError(
                f"{self.description}: {url} answered 200 with an HTML page, not the file "
                f"(a captive portal or proxy?); set {setting} to a reachable mirror"
            )
        return body


def _read_body(response: requests.Response, deadline: float, timeout: float) -> bytes:
    chunks = []
    for chunk in response.iter_content(_CHUNK):
        chunks.append(chunk)
        if time.monotonic() > deadline:
            raise _RetryableError(f"the answer took longer than {timeout:g}s")
    body = b"".join(chunks)
    expected = response.headers.get("Content-Length")
    # With a Content-Encoding the header counts compressed bytes; urllib3 already
    # checks those, so compare only what we can compare honestly.
    encoding = response.headers.get("Content-Encoding", "identity").lower()
    if (
        expected is not None
        and expected.isdigit()
        and encoding == "identity"
        and len(body) != int(expected)
    ):
        raise _RetryableError(f"body cut short: {len(body)} of {expected} bytes")
    return body
