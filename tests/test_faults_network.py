"""Network faults, injected by a real HTTP server on loopback, at two levels.

Each fault must end as a retried success or a clear infrastructure error for that case:
never a pass, never a skip, never a drift. First against :class:`GitHubSource` itself,
then end to end: a pytester run of a toy catalog whose ``main`` comes from the server.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from http_fixture import Hang, Html, LoopbackServer, Reset, ShortBody, Status, Trickle

from canary.errors import FetchError
from canary.sources import github
from canary.sources.github import GitHubSource
from canary.sources.health import HostHealth

pytest_plugins = ["pytester"]

ROOT = "/example/toy/main/src/toy"
INIT = b'__version__ = "2.11.0.dev0"\n'
CORE = b"class Engine:\n    def run(self, steps, *, num_items_in_batch=None):\n        pass\n"
OTHER = b"def helper():\n    return 1\n"


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    for name in ("GITHUB_TOKEN", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    tree = {f"{ROOT}/__init__.py": INIT, f"{ROOT}/core.py": CORE, f"{ROOT}/other.py": OTHER}
    with LoopbackServer(tree) as srv:
        yield srv


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def source(url: str, hosts: HostHealth, sleeps: Sleeps, **kwargs) -> GitHubSource:
    kwargs.setdefault("timeout", 0.5)
    kwargs.setdefault("retries", 3)
    return GitHubSource(
        "toy", "example/toy", "main", "src", base_url=url, sleep=sleeps, hosts=hosts, **kwargs
    )


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens there once the socket is closed


# -- at the source --------------------------------------------------------------------------

RECOVERS = {
    "429 storm with Retry-After": [Status(429, {"Retry-After": "2"})] * 3,
    "429 storm without Retry-After": [Status(429)] * 3,
    "5xx": [Status(500), Status(502), Status(503)],
    "connection resets": [Reset()] * 3,
    "timeouts (no answer)": [Hang(1.0)] * 2,
    "slow trickle": [Trickle(delay=0.05, chunk=2)],
    "body cut short": [ShortBody(5)] * 3,
}


@pytest.mark.parametrize("fault", list(RECOVERS))
def test_a_fault_that_clears_within_the_retries_is_a_retried_success(server, fault):
    server.script(f"{ROOT}/core.py", RECOVERS[fault])
    sleeps = Sleeps()
    assert source(server.url, HostHealth(), sleeps).fetch(["toy/core.py"]) == {"toy/core.py": CORE}
    assert server.hits(f"{ROOT}/core.py") == len(RECOVERS[fault]) + 1
    if "Retry-After" in fault and "without" not in fault:
        assert sleeps == [2.0, 2.0, 2.0]  # the server's ask, not our backoff


@pytest.mark.parametrize("fault", list(RECOVERS))
def test_a_fault_that_outlasts_the_retries_is_a_fetch_error_never_an_absent_file(server, fault):
    server.script(f"{ROOT}/core.py", [RECOVERS[fault][0]] * 4)  # one more than the retries
    with pytest.raises(FetchError, match=r"could not fetch .*core\.py.*gave up after 4 attempts"):
        source(server.url, HostHealth(), Sleeps()).fetch(["toy/core.py"])


def test_an_html_page_answered_200_fails_at_once_without_retrying(server):
    server.script(f"{ROOT}/core.py", [Html()])
    with pytest.raises(FetchError, match="HTML page, not the file"):
        source(server.url, HostHealth(), Sleeps()).fetch(["toy/core.py"])
    assert server.hits(f"{ROOT}/core.py") == 1


def test_an_unreachable_host_costs_one_round_of_retries_per_run_not_per_case():
    url, hosts, sleeps = f"http://127.0.0.1:{closed_port()}", HostHealth(), Sleeps()
    with pytest.raises(FetchError, match="gave up after 4 attempts"):
        source(url, hosts, sleeps).fetch(["toy/core.py"])
    assert len(sleeps) == 3
    # Every later case (a new source, as in a run) fails at once, saying why.
    started = time.perf_counter()
    for _ in range(20):
        with pytest.raises(FetchError, match=r"is not answering \(4 attempts in a row"):
            source(url, hosts, sleeps).fetch(["toy/core.py", "toy/other.py"])
    assert len(sleeps) == 3
    assert time.perf_counter() - started < 1.0


def test_a_host_that_answers_badly_is_not_called_down(server):
    # 5xx and short bodies are answers: the host is up, the next file may well work.
    hosts = HostHealth()
    server.script(f"{ROOT}/core.py", [Status(503)] * 4)
    with pytest.raises(FetchError, match="HTTP 503"):
        source(server.url, hosts, Sleeps()).fetch(["toy/core.py"])
    assert source(server.url, hosts, Sleeps()).fetch(["toy/other.py"]) == {"toy/other.py": OTHER}


def test_a_host_back_after_its_hold_is_tried_again(server):
    now = [0.0]
    hosts = HostHealth(hold=60.0, clock=lambda: now[0])
    server.script(f"{ROOT}/core.py", [Reset()] * 4)
    with pytest.raises(FetchError, match="gave up"):
        source(server.url, hosts, Sleeps()).fetch(["toy/core.py"])
    with pytest.raises(FetchError, match="is not answering"):
        source(server.url, hosts, Sleeps()).fetch(["toy/core.py"])
    now[0] = 61.0
    assert source(server.url, hosts, Sleeps()).fetch(["toy/core.py"]) == {"toy/core.py": CORE}


def test_one_answer_between_failures_keeps_the_host_up(server):
    hosts = HostHealth()
    for _ in range(3):  # 3 failures, a success, 3 failures...: never 4 in a row
        server.script(f"{ROOT}/core.py", [Reset()] * 3)
        assert source(server.url, hosts, Sleeps()).fetch(["toy/core.py"]) == {"toy/core.py": CORE}
    assert hosts.down_reason(server.url.removeprefix("http://")) is None


# -- end to end: a pytester run whose main comes from the loopback server ------------------

TAGS = """
[packages.toy]
repo = "example/toy"
package_dir = "src"
floor = "1.0.0"
versions = ["1.0.0"]
"""

CHECKS = '''
import pytest
from canary.catalog import check, expect_parameters

pytestmark = pytest.mark.upstream("toy")

@check(reads="toy/core.py", fix="chunked NLL loss", since="1.0.0")
def test_run_takes_num_items_in_batch(upstream):
    """Engine.run takes num_items_in_batch."""
    expect_parameters(upstream.module("toy/core.py").cls("Engine").method("run"),
                      "num_items_in_batch")

@check(reads="toy/other.py", fix="chunked NLL loss", until="1.0.0")
def test_old_releases_only(upstream):
    """A check whose window ends before main: skipped only once main's version is known."""
'''


@pytest.fixture
def project(pytester: pytest.Pytester, server, monkeypatch, tmp_path) -> pytest.Pytester:
    monkeypatch.setenv("CANARY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CANARY_GITHUB_RAW_URL", server.url)
    monkeypatch.setenv("CANARY_GITHUB_API_URL", server.url)
    # The run's own sources, made by the plugin: fast retries, short timeouts.
    monkeypatch.setattr(github, "DEFAULT_BACKOFF", 0.01)
    monkeypatch.setattr(github, "DEFAULT_TIMEOUT", 0.5)
    monkeypatch.setattr(github, "DEFAULT_RETRIES", 3)
    monkeypatch.setattr(github, "HOSTS", HostHealth())
    pytester.makefile(".toml", tags=TAGS)
    pytester.makepyfile(test_toy=CHECKS)
    return pytester


def run_main(project: pytest.Pytester) -> pytest.RunResult:
    return project.runpytest("-p", "no:cacheprovider", "--canary-tags=toy=main", "-rA")


@pytest.mark.parametrize("fault", list(RECOVERS))
def test_end_to_end_a_passing_fault_is_retried_and_the_checks_run(project, server, fault):
    server.script(f"{ROOT}/core.py", RECOVERS[fault])
    result = run_main(project)
    result.assert_outcomes(passed=1, skipped=1)


FAILS = {
    **{fault: [responses[0]] * 4 for fault, responses in RECOVERS.items()},
    "HTML page with status 200": [Html()],
}


@pytest.mark.parametrize("fault", list(FAILS))
def test_end_to_end_a_lasting_fault_is_an_error_never_pass_skip_or_drift(project, server, fault):
    server.script(f"{ROOT}/core.py", FAILS[fault])
    result = run_main(project)
    # The case's fetch failed, so none of its checks can say anything: each is an error
    # (even the one whose window would have skipped main: its version is unknown too).
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*FetchError*core.py*"])
    assert result.outlines[-1].startswith("canary: not everything was checked: 2 error(s)")
    result.stdout.no_fnmatch_line("*upstream drift*")


def test_end_to_end_a_version_that_cannot_be_fetched_errors_every_check_of_the_case(
    project, server
):
    # Without main's version no window can be decided: an error, not a skip that reads fine.
    server.script(f"{ROOT}/__init__.py", [Status(503)] * 20)
    result = run_main(project)
    result.assert_outcomes(errors=2)


def test_end_to_end_an_unreachable_host_fails_fast_for_the_whole_run(project, monkeypatch):
    # Six releases read from GitHub at their tags, one case at a time; each retry round
    # sleeps 1 + 2 s. Paid per case that is 18 s; paid once per run, about 3 s.
    versions = ", ".join(f'"1.0.{n}"' for n in range(6))
    project.makefile(".toml", tags=TAGS.replace('["1.0.0"]', f"[{versions}]"))
    monkeypatch.setattr(github, "DEFAULT_BACKOFF", 1.0)
    monkeypatch.setattr(github, "DEFAULT_RETRIES", 2)
    monkeypatch.setenv("CANARY_GITHUB_RAW_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("CANARY_GITHUB_API_URL", f"http://127.0.0.1:{closed_port()}")
    started = time.perf_counter()
    result = project.runpytest(
        "-p", "no:cacheprovider", "--canary-source=github", "--canary-workers=1"
    )
    elapsed = time.perf_counter() - started
    result.assert_outcomes(errors=6, skipped=6)
    result.stdout.fnmatch_lines(["*is not answering (3 attempts in a row*"])
    assert elapsed < 9.0, f"{elapsed:.1f} s: every case paid its own retries"
