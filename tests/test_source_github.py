"""GitHubSource against a real HTTP server on loopback: nothing here leaves 127.0.0.1."""

from __future__ import annotations

import email.utils
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from http_fixture import Html, LoopbackServer, Reset, ShortBody, Status, Trickle, self_signed

from canary.errors import FetchError, RefNotFound
from canary.sources import Source
from canary.sources.github import (
    GitHubSource,
    backoff_delay,
    parse_retry_after,
    token_goes_to,
)
from canary.sources.health import HostHealth

REPO = "octo/pkg"
REF = "main"
ROOT = f"/{REPO}/{REF}/src"
INIT = b'__version__ = "1.0.0.dev0"\n'
TRAINER = b"class Trainer:\n    def compute_loss(self, model, inputs):\n        return 0\n"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    # The developer's own token, proxies or netrc must neither leak into the loopback
    # server nor change what the tests see.
    for name in (
        "GITHUB_TOKEN",
        "CANARY_GITHUB_TOKEN_FOR_MIRRORS",
        "REQUESTS_CA_BUNDLE",
        "CANARY_GITHUB_RAW_URL",
        "CANARY_GITHUB_API_URL",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    files = {f"{ROOT}/pkg/__init__.py": INIT, f"{ROOT}/pkg/trainer.py": TRAINER}
    with LoopbackServer(files) as srv:
        yield srv


class Sleeps:
    """Stands in for time.sleep: records the asks, waits for nothing."""

    def __init__(self) -> None:
        self.calls: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, seconds: float) -> None:
        with self._lock:
            self.calls.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make(server: LoopbackServer, sleeps: Sleeps):
    sources: list[GitHubSource] = []

    def factory(ref: str = REF, **kwargs) -> GitHubSource:
        kwargs.setdefault("base_url", server.url)
        kwargs.setdefault("backoff", 0.01)
        kwargs.setdefault("timeout", 2.0)
        kwargs.setdefault("sleep", sleeps)
        source = GitHubSource("pkg", REPO, ref, "src", **kwargs)
        sources.append(source)
        return source

    yield factory
    for source in sources:
        source.close()


def test_is_a_source(make) -> None:
    source = make()
    assert isinstance(source, Source)
    assert source.package == "pkg"
    assert source.ref == "main"
    assert source.description.startswith("pkg main from GitHub (octo/pkg")


def test_description_names_default_host_plainly() -> None:
    source = GitHubSource("transformers", "huggingface/transformers", "main", "src")
    assert source.description == "transformers main from GitHub (huggingface/transformers)"
    assert source.url_for("transformers/trainer.py").endswith(
        "/huggingface/transformers/main/src/transformers/trainer.py"
    )


def test_url_without_package_dir() -> None:
    source = GitHubSource("trl", "huggingface/trl", "v1.4.0", base_url="http://127.0.0.1:9/")
    assert source.url_for("trl/trainer/sft_trainer.py") == (
        "http://127.0.0.1:9/huggingface/trl/v1.4.0/trl/trainer/sft_trainer.py"
    )


@pytest.mark.parametrize("bad", ["", "/pkg/x.py", "pkg/../../etc/passwd"])
def test_rejects_paths_outside_the_package(make, bad: str) -> None:
    with pytest.raises(ValueError, match="relative path"):
        make().fetch([bad])


def test_200_returns_bytes(make, server: LoopbackServer) -> None:
    assert make().fetch(["pkg/trainer.py"]) == {"pkg/trainer.py": TRAINER}
    assert server.hits() == 1


def test_base_url_from_env(monkeypatch: pytest.MonkeyPatch, server: LoopbackServer) -> None:
    monkeypatch.setenv("CANARY_GITHUB_RAW_URL", server.url + "/")
    source = GitHubSource("pkg", REPO, REF, "src")
    assert source.fetch(["pkg/trainer.py"]) == {"pkg/trainer.py": TRAINER}


def test_missing_file_at_existing_ref_is_none(make, server: LoopbackServer) -> None:
    source = make()
    assert source.fetch(["pkg/gone.py"]) == {"pkg/gone.py": None}
    assert server.hits(f"{ROOT}/pkg/__init__.py") == 1  # the sentinel probe
    # The probe's answer is kept: another miss costs one request, not two.
    assert source.fetch(["pkg/also_gone.py"]) == {"pkg/also_gone.py": None}
    assert server.hits(f"{ROOT}/pkg/__init__.py") == 1


def test_missing_ref_raises_ref_not_found(make, server: LoopbackServer) -> None:
    with pytest.raises(RefNotFound, match=r"octo/pkg has no ref 'v9\.9\.9'"):
        make("v9.9.9").fetch(["pkg/trainer.py"])
    assert server.hits(f"/{REPO}/v9.9.9/src/pkg/__init__.py") == 1


def test_missing_ref_when_sentinel_itself_requested(make, server: LoopbackServer) -> None:
    with pytest.raises(RefNotFound):
        make("nope").fetch(["pkg/__init__.py"])
    assert server.hits() == 1


def test_concurrent_misses_probe_once(make, server: LoopbackServer) -> None:
    paths = [f"pkg/missing_{i}.py" for i in range(20)]
    assert make().fetch(paths) == dict.fromkeys(paths)
    assert server.hits(f"{ROOT}/pkg/__init__.py") == 1


def test_failed_probe_is_not_cached_as_missing_ref(make, server: LoopbackServer) -> None:
    server.script(f"{ROOT}/pkg/__init__.py", [Status(401)])
    source = make()
    with pytest.raises(FetchError) as info:
        source.fetch(["pkg/gone.py"])
    assert not isinstance(info.value, RefNotFound)
    assert source.fetch(["pkg/gone.py"]) == {"pkg/gone.py": None}


def test_429_honours_retry_after(make, server: LoopbackServer, sleeps: Sleeps) -> None:
    path = f"{ROOT}/pkg/trainer.py"
    server.script(path, [Status(429, {"Retry-After": "2"}), Status(200)])
    assert make().fetch(["pkg/trainer.py"]) == {"pkg/trainer.py": TRAINER}
    assert sleeps.calls == [2.0]
    assert server.hits(path) == 2


def test_503_retry_after_http_date_is_capped(make, server: LoopbackServer, sleeps) -> None:
    far = email.utils.formatdate(time.time() + 3600, usegmt=True)
    server.script(f"{ROOT}/pkg/trainer.py", [Status(503, {"Retry-After": far}), Status(200)])
    assert make().fetch(["pkg/trainer.py"])["pkg/trainer.py"] == TRAINER
    assert sleeps.calls == [60.0]


def test_parse_retry_after() -> None:
    now = 1_000_000.0
    assert parse_retry_after("5") == 5.0
    assert parse_retry_after("3600") == 60.0
    assert parse_retry_after(email.utils.formatdate(now + 7, usegmt=True), now=now) == 7.0
    assert parse_retry_after(email.utils.formatdate(now - 7, usegmt=True), now=now) == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None


def test_backoff_is_exponential_and_capped() -> None:
    assert [backoff_delay(1.0, n) for n in range(4)] == [1.0, 2.0, 4.0, 8.0]
    assert backoff_delay(1.0, 20) == 60.0


def test_5xx_until_retries_run_out(make, server: LoopbackServer, sleeps: Sleeps) -> None:
    path = f"{ROOT}/pkg/trainer.py"
    server.script(path, [Status(500)] * 10)
    with pytest.raises(FetchError, match=r"HTTP 500 \(gave up after 4 attempts\)") as info:
        make(retries=3).fetch(["pkg/trainer.py"])
    assert path in str(info.value)
    assert server.hits(path) == 4
    assert sleeps.calls == [0.01, 0.02, 0.04]


def test_retries_zero_means_one_attempt(make, server: LoopbackServer, sleeps) -> None:
    server.script(f"{ROOT}/pkg/trainer.py", [Status(502)])
    with pytest.raises(FetchError, match="1 attempts"):
        make(retries=0).fetch(["pkg/trainer.py"])
    assert sleeps.calls == []


def test_connection_reset_then_200(make, server: LoopbackServer, sleeps: Sleeps) -> None:
    path = f"{ROOT}/pkg/trainer.py"
    server.script(path, [Reset(), Status(200)])
    assert make().fetch(["pkg/trainer.py"]) == {"pkg/trainer.py": TRAINER}
    assert server.hits(path) == 2
    assert len(sleeps.calls) == 1


def test_resets_until_retries_run_out(make, server: LoopbackServer) -> None:
    server.script(f"{ROOT}/pkg/trainer.py", [Reset()] * 3)
    with pytest.raises(FetchError, match=r"ConnectionError.*3 attempts"):
        make(retries=2).fetch(["pkg/trainer.py"])


def test_short_body_is_retried(make, server: LoopbackServer) -> None:
    path = f"{ROOT}/pkg/trainer.py"
    server.script(path, [ShortBody(missing=10), Status(200)])
    assert make().fetch(["pkg/trainer.py"]) == {"pkg/trainer.py": TRAINER}
    assert server.hits(path) == 2


def test_short_body_never_passes_as_the_file(make, server: LoopbackServer) -> None:
    server.script(f"{ROOT}/pkg/trainer.py", [ShortBody()] * 2)
    with pytest.raises(FetchError, match="2 attempts"):
        make(retries=1).fetch(["pkg/trainer.py"])


def test_content_length_mismatch_is_retried(make, server: LoopbackServer) -> None:
    # A body that ends cleanly but disagrees with its own Content-Length header.
    lying = Status(200, {"Content-Length": "5", "Connection": "close"}, body=b"abc")
    server.script(f"{ROOT}/pkg/trainer.py", [lying, Status(200)])
    assert make().fetch(["pkg/trainer.py"]) == {"pkg/trainer.py": TRAINER}


def test_slow_trickle_times_out_and_is_retried(make, server: LoopbackServer) -> None:
    path = f"{ROOT}/pkg/trainer.py"
    server.script(path, [Trickle(delay=0.4, chunk=8), Status(200)])
    started = time.monotonic()
    assert make(timeout=0.2).fetch(["pkg/trainer.py"]) == {"pkg/trainer.py": TRAINER}
    assert server.hits(path) == 2
    assert time.monotonic() - started < 2


def test_html_200_is_a_fetch_error(make, server: LoopbackServer, sleeps: Sleeps) -> None:
    server.script(f"{ROOT}/pkg/trainer.py", [Html()])
    with pytest.raises(FetchError, match="HTML page"):
        make().fetch(["pkg/trainer.py"])
    assert sleeps.calls == []  # a portal does not go away on its own


def test_html_body_sniffed_even_as_text_plain(make, server: LoopbackServer) -> None:
    server.script(f"{ROOT}/pkg/trainer.py", [Html(content_type="text/plain")])
    with pytest.raises(FetchError, match="HTML page"):
        make().fetch(["pkg/trainer.py"])


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def mirror(certificate, monkeypatch) -> Iterator[LoopbackServer]:
    """The same tree over https on loopback: a mirror, as far as the token is concerned."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certificate[0]))
    files = {f"{ROOT}/pkg/__init__.py": INIT, f"{ROOT}/pkg/trainer.py": TRAINER}
    with LoopbackServer(files, tls=certificate) as srv:
        yield srv


def test_token_goes_to_githubs_own_hosts_over_https_only() -> None:
    assert token_goes_to("https://raw.githubusercontent.com/o/r/main/x.py", mirrors=False)
    assert token_goes_to("https://api.github.com/repos/o/r/commits/main", mirrors=False)
    assert not token_goes_to("http://raw.githubusercontent.com/o/r/main/x.py", mirrors=False)
    assert not token_goes_to("https://raw.githubusercontent.com.evil.test/x", mirrors=False)
    assert not token_goes_to("https://mirror.test/o/r/main/x.py", mirrors=False)
    assert token_goes_to("https://mirror.test/o/r/main/x.py", mirrors=True)
    assert not token_goes_to("http://mirror.test/o/r/main/x.py", mirrors=True)


def test_token_is_not_sent_to_a_mirror_unless_asked(make, mirror: LoopbackServer) -> None:
    make(token="s3cret", base_url=mirror.url).fetch(["pkg/trainer.py"])
    (request,) = mirror.requests
    assert "authorization" not in request.headers


def test_token_sent_as_bearer_header_to_a_mirror_asked_for(
    monkeypatch, make, mirror: LoopbackServer
) -> None:
    monkeypatch.setenv("CANARY_GITHUB_TOKEN_FOR_MIRRORS", "1")
    make(token="s3cret", base_url=mirror.url).fetch(["pkg/trainer.py"])
    (request,) = mirror.requests
    assert request.headers["authorization"] == "Bearer s3cret"


def test_token_from_env_to_a_mirror_asked_for(monkeypatch, make, mirror) -> None:
    monkeypatch.setenv("CANARY_GITHUB_TOKEN_FOR_MIRRORS", "1")
    monkeypatch.setenv("GITHUB_TOKEN", "from-env")
    make(base_url=mirror.url).fetch(["pkg/trainer.py"])
    assert mirror.requests[0].headers["authorization"] == "Bearer from-env"


def test_token_never_goes_over_plain_http_even_when_asked(
    monkeypatch, make, server: LoopbackServer
) -> None:
    monkeypatch.setenv("CANARY_GITHUB_TOKEN_FOR_MIRRORS", "1")
    server.script(f"{ROOT}/pkg/trainer.py", [Status(401)])
    with pytest.raises(FetchError, match="GITHUB_TOKEN is set but not sent to this host"):
        make(token="s3cret").fetch(["pkg/trainer.py"])
    assert all("authorization" not in r.headers for r in server.requests)


def test_a_refusal_by_a_mirror_the_token_was_kept_from_names_the_opt_in(make, mirror) -> None:
    mirror.script(f"{ROOT}/pkg/trainer.py", [Status(403)])
    with pytest.raises(FetchError, match="set CANARY_GITHUB_TOKEN_FOR_MIRRORS=1"):
        make(token="s3cret", base_url=mirror.url).fetch(["pkg/trainer.py"])


def test_no_token_no_header(make, server: LoopbackServer) -> None:
    make().fetch(["pkg/trainer.py", "pkg/gone.py"])
    assert server.requests
    assert all("authorization" not in r.headers for r in server.requests)


def test_token_never_in_repr_or_errors(monkeypatch, make, mirror: LoopbackServer) -> None:
    monkeypatch.setenv("CANARY_GITHUB_TOKEN_FOR_MIRRORS", "1")
    mirror.script(f"{ROOT}/pkg/trainer.py", [Status(401)])
    source = make(token="s3cret", base_url=mirror.url)
    with pytest.raises(FetchError) as info:
        source.fetch(["pkg/trainer.py"])
    assert "s3cret" not in str(info.value)
    assert "s3cret" not in repr(source)
    assert "GITHUB_TOKEN" in str(info.value)


def test_403_rate_limited_names_github_token(make, server: LoopbackServer, sleeps) -> None:
    limited = Status(403, {"X-RateLimit-Remaining": "0"})
    server.script(f"{ROOT}/pkg/trainer.py", [limited])
    with pytest.raises(FetchError, match="rate limited; set GITHUB_TOKEN"):
        make().fetch(["pkg/trainer.py"])
    assert server.hits() == 1
    assert sleeps.calls == []


@pytest.mark.parametrize("code", [400, 401, 403, 410])
def test_other_statuses_fail_at_once(make, server: LoopbackServer, code: int) -> None:
    server.script(f"{ROOT}/pkg/trainer.py", [Status(code)])
    with pytest.raises(FetchError, match=f"HTTP {code}"):
        make().fetch(["pkg/trainer.py"])
    assert server.hits() == 1


def test_concurrent_fetch_returns_each_file(make, server: LoopbackServer) -> None:
    files = {f"pkg/models/m{i}/modeling.py": f"# model {i}\n".encode() * (i + 1) for i in range(60)}
    for path, body in files.items():
        server.add(f"{ROOT}/{path}", body)
    # Some answers need a retry, so completions arrive out of order.
    for i in range(0, 60, 7):
        server.script(f"{ROOT}/pkg/models/m{i}/modeling.py", [Status(503), Reset()])
    wanted = [*files, "pkg/models/absent.py"]
    got = make(max_workers=8).fetch(wanted)
    assert got == {**files, "pkg/models/absent.py": None}
    assert list(got) == wanted


def test_one_failure_fails_the_whole_fetch(make, server: LoopbackServer) -> None:
    for i in range(10):
        server.add(f"{ROOT}/pkg/f{i}.py", b"x = 1\n")
    server.script(f"{ROOT}/pkg/f3.py", [Status(500)] * 10)
    with pytest.raises(FetchError, match=r"f3\.py"):
        make(retries=2).fetch([f"pkg/f{i}.py" for i in range(10)])


def test_duplicate_paths_fetched_once(make, server: LoopbackServer) -> None:
    assert make().fetch(["pkg/trainer.py", "pkg/trainer.py"]) == {"pkg/trainer.py": TRAINER}
    assert server.hits() == 1


def test_empty_fetch(make, server: LoopbackServer) -> None:
    assert make().fetch([]) == {}
    assert server.hits() == 0


def test_answer_slower_than_timeout_overall_is_retried(make, server: LoopbackServer) -> None:
    # Every gap is under the read timeout, but the whole answer is not.
    path = f"{ROOT}/pkg/trainer.py"
    server.script(path, [Trickle(delay=0.03, chunk=8), Status(200)])
    assert make(timeout=0.25).fetch(["pkg/trainer.py"]) == {"pkg/trainer.py": TRAINER}
    assert server.hits(path) == 2


def test_uses_given_session_and_leaves_it_open(server: LoopbackServer) -> None:
    session = requests.Session()
    session.headers["X-Canary-Test"] = "1"
    source = GitHubSource("pkg", REPO, REF, "src", base_url=server.url, session=session)
    source.fetch(["pkg/trainer.py"])
    source.close()
    assert server.requests[0].headers["x-canary-test"] == "1"
    assert session.get(f"{server.url}{ROOT}/pkg/trainer.py", timeout=2).content == TRAINER
    session.close()


# -- failure modes seen against mirrors on loopback (issue 13) ------------------------------


def test_a_200_anywhere_in_the_batch_proves_the_ref_though_the_sentinel_404s(make, server):
    # The sentinel answered 404 first (a CDN hiccup); twelve files of the same ref then
    # answered 200. The ref exists: the sentinel is reported absent, not the ref missing.
    paths = [f"pkg/f{i}.py" for i in range(12)]
    for path in paths:
        server.add(f"{ROOT}/{path}", b"x = 1\n")
    server.script(f"{ROOT}/pkg/__init__.py", [Status(404)])
    got = make(max_workers=1).fetch(["pkg/__init__.py", *paths])
    assert got["pkg/__init__.py"] is None
    assert all(got[path] == b"x = 1\n" for path in paths)


def test_a_missing_ref_is_ref_not_found_every_time_never_an_absent_file(make, server):
    paths = [f"pkg/m{i}.py" for i in range(16)]
    for _ in range(10):
        with pytest.raises(RefNotFound):
            make("v9.9.9", max_workers=8).fetch(paths)


def test_a_failed_file_starts_no_other_file_of_its_batch(make, server: LoopbackServer) -> None:
    paths = [f"pkg/f{i}.py" for i in range(64)]
    for path in paths:
        server.script(f"{ROOT}/{path}", [Status(401)] * 5)  # fails at once, no retry
    for _ in range(5):
        before = server.hits()
        with pytest.raises(FetchError, match="HTTP 401"):
            make(max_workers=8).fetch(paths)
        # The first wave was under way when the first failure came; nothing after it.
        assert server.hits() - before <= 8


def test_files_in_flight_stop_retrying_once_their_batch_failed(make, server: LoopbackServer):
    server.add(f"{ROOT}/pkg/slow.py", b"x = 1\n")
    server.script(f"{ROOT}/pkg/__init__.py", [Status(401)])
    # The real wait (not the fixture's instant sleep, which let retries outrun the other
    # file's 401 on a loaded machine), far longer than that 401 can take: its failure
    # wakes the wait, and the retry sees the batch failed.
    server.script(f"{ROOT}/pkg/slow.py", [Status(503, {"Retry-After": "60"})] * 6)
    with pytest.raises(FetchError, match="HTTP 401"):
        make(max_workers=2, retries=5, sleep=None).fetch(["pkg/__init__.py", "pkg/slow.py"])
    # One attempt, perhaps a second already under way: never the whole backoff schedule.
    assert server.hits(f"{ROOT}/pkg/slow.py") <= 2


def test_a_host_answering_5xx_on_every_file_is_called_down_after_one_round(make, server):
    hosts = HostHealth()
    paths = ("pkg/__init__.py", "pkg/trainer.py", "pkg/other.py", "pkg/more.py")
    for path in paths:
        server.script(f"{ROOT}/{path}", [Status(503)] * 100)
    # The two files are fetched side by side: one may exhaust its retries first, or both
    # may have failed once before either does, and the host is called down mid-round. On a
    # loaded machine one may give up before the other was asked at all, and the batch
    # stops there: a round on two other files then has a second file failing, whichever.
    host = urlsplit(server.url).netloc
    for batch in (paths[:2], paths[2:]):
        with pytest.raises(FetchError, match=r"gave up after 3 attempts|is not answering"):
            make(retries=2, hosts=hosts).fetch(list(batch))
        if hosts.down_reason(host) is not None:
            break
    first_round = server.hits()
    # Seven more cases, as in a run: each fails at once, saying why.
    for _ in range(7):
        with pytest.raises(FetchError, match=r"is not answering \(HTTP 503 on [2-4] files"):
            make(retries=2, hosts=hosts).fetch(["pkg/trainer.py", "pkg/other.py"])
    assert server.hits() == first_round


def test_a_persistent_5xx_on_one_file_leaves_the_host_up(make, server: LoopbackServer) -> None:
    hosts = HostHealth()
    server.script(f"{ROOT}/pkg/trainer.py", [Status(502)] * 100)
    with pytest.raises(FetchError, match="gave up"):
        make(retries=2, hosts=hosts).fetch(["pkg/trainer.py"])
    assert make(retries=2, hosts=hosts).fetch(["pkg/__init__.py"]) == {"pkg/__init__.py": INIT}


# -- pinning a branch to one commit ---------------------------------------------------------


def test_pin_asks_the_commits_endpoint_for_the_sha_with_the_token(make, mirror, monkeypatch):
    server = mirror
    monkeypatch.setenv("CANARY_GITHUB_TOKEN_FOR_MIRRORS", "1")
    monkeypatch.setenv("CANARY_GITHUB_API_URL", server.url + "/")
    source = make(token="t0ken", base_url=server.url)
    commit = source.pin()
    assert commit == server.commit_of(REPO, REF)
    (asked,) = server.requests_for(f"/repos/{REPO}/commits/{REF}")
    assert asked.headers["accept"] == "application/vnd.github.sha"
    assert asked.headers["authorization"] == "Bearer t0ken"
    assert source.fetch(["pkg/trainer.py"]) == {"pkg/trainer.py": TRAINER}
    assert server.requests_for(f"{ROOT}/pkg/trainer.py")[0].requested == (
        f"/{REPO}/{commit}/src/pkg/trainer.py"
    )
    assert commit[:12] in source.description


def test_pin_of_a_ref_github_does_not_have_is_ref_not_found(make, server) -> None:
    with pytest.raises(RefNotFound, match=r"octo/pkg has no ref 'nope'"):
        make("nope", api_url=server.url).pin()


def test_pin_never_takes_an_answer_that_is_not_a_commit(make, server) -> None:
    server.script(f"/repos/{REPO}/commits/{REF}", [Status(200, body=b'{"sha": "abc"}')])
    with pytest.raises(FetchError, match="not a commit id"):
        make(api_url=server.url).pin()


def test_an_html_page_for_the_commit_names_the_api_setting(make, server) -> None:
    server.script(f"/repos/{REPO}/commits/{REF}", [Html()])
    with pytest.raises(FetchError, match=r"HTML page.*set CANARY_GITHUB_API_URL"):
        make(api_url=server.url).pin()


def test_pin_retries_like_any_request(make, server, sleeps) -> None:
    server.script(f"/repos/{REPO}/commits/{REF}", [Status(503), Reset()])
    assert make(api_url=server.url).pin() == server.commit_of(REPO, REF)
    assert len(sleeps.calls) == 2


# -- GitHub's answers, read right -------------------------------------------------------


def test_a_secondary_rate_limit_is_waited_out_as_asked(make, server, sleeps) -> None:
    limited = Status(403, {"Retry-After": "7"})
    server.script(f"{ROOT}/pkg/trainer.py", [limited, limited])
    assert make().fetch(["pkg/trainer.py"]) == {"pkg/trainer.py": TRAINER}
    assert sleeps.calls == [7.0, 7.0]


def test_a_secondary_rate_limit_that_stays_is_bounded_and_named(make, server, sleeps) -> None:
    server.script(f"{ROOT}/pkg/trainer.py", [Status(403, {"Retry-After": "3600"})] * 10)
    with pytest.raises(FetchError) as raised:
        make(retries=2).fetch(["pkg/trainer.py"])
    message = str(raised.value)
    assert "secondary rate limit" in message
    assert "gave up after 3 attempts" in message
    assert "private repository" not in message
    assert sleeps.calls == [60.0, 60.0]  # Retry-After capped: a run never stalls for an hour


def test_a_missing_repository_is_named_as_such_not_as_a_missing_ref(make, server) -> None:
    server.url  # noqa: B018 (started)
    source = GitHubSource(
        "pkg", "octo/gone", "main", "src", base_url=server.url, api_url=server.url
    )
    with pytest.raises(RefNotFound) as raised:
        source.pin()
    assert str(raised.value).startswith(f"no repository octo/gone at {server.url}")
    assert "set GITHUB_TOKEN" in str(raised.value)
    assert raised.value.cause == "no repository octo/gone"


def test_a_hint_names_the_variable_of_the_request_when_both_share_a_base(
    make, server: LoopbackServer
) -> None:
    server.script(f"{ROOT}/pkg/trainer.py", [Html()])
    with pytest.raises(FetchError) as raised:
        make(api_url=server.url).fetch(["pkg/trainer.py"])
    assert "set CANARY_GITHUB_RAW_URL to a reachable mirror" in str(raised.value)
    server.script(f"/repos/{REPO}/commits/{REF}", [Html(content_type="text/plain")])
    with pytest.raises(FetchError) as raised:
        make(api_url=server.url).pin()
    assert "CANARY_GITHUB_API_URL" in str(raised.value)


def test_a_missing_ref_is_one_short_line_whatever_was_asked(make, server) -> None:
    paths = [f"pkg/module_{n}.py" for n in range(40)]
    with pytest.raises(RefNotFound) as raised:
        make("v9.9.9").fetch(paths)
    message = str(raised.value)
    assert "\n" not in message
    assert len(message) < 200
    assert "module_1" not in message
    assert raised.value.cause == "octo/pkg has no ref 'v9.9.9'"
