"""The package-index path under parallel runs and killed downloads, with a fake ``pip``.

A ``pip`` package put first on ``PYTHONPATH`` stands in for the real one in every
``python -m pip`` canary starts (xdist workers included): it builds the wheel here, logs
each download, and on cue hangs halfway through writing it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fake_pip import install_fake_pip

from canary.errors import FetchError, IndexUnreachable
from canary.sources import index, pipfailure
from canary.sources.health import HostHealth

pytest_plugins = ["pytester"]

FAKE_PIP = """
import os, sys, time, zipfile
args = sys.argv[1:]
dest, requirement = args[args.index("--dest") + 1], args[-1]
package, version = requirement.split("==")
with open(os.environ["FAKE_PIP_LOG"], "a") as log:
    log.write(requirement + "\\n")
mode = os.environ.get("FAKE_PIP_MODE")
if mode == "loud":
    sys.exit("FAKE PIP: canary started pip, which it must not do here")
if mode == "refused":  # what pip 23 prints when the index refuses connections
    retry = ("WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, "
             "status=None)) after connection broken by 'NewConnectionError('<pip._vendor."
             "urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new "
             "connection: [Errno 111] Connection refused')': /simple/" + package + "/")
    sys.stderr.write(retry + "\\n")
    sys.stderr.write("ERROR: Could not find a version that satisfies the requirement "
                     + requirement + " (from versions: none)\\n")
    sys.stderr.write("ERROR: No matching distribution found for " + requirement + "\\n")
    sys.exit(1)
if version not in os.environ.get("FAKE_PIP_VERSIONS", version).split(","):
    sys.stderr.write("ERROR: Could not find a version that satisfies the requirement "
                     + requirement + " (from versions: " + os.environ["FAKE_PIP_VERSIONS"]
                     + ")\\nERROR: No matching distribution found for " + requirement + "\\n")
    sys.exit(1)
wheel = os.path.join(dest, f"{package}-{version}-py3-none-any.whl")
with zipfile.ZipFile(wheel, "w") as archive:
    archive.writestr(f"{package}/__init__.py", f"__version__ = {version!r}\\n")
    archive.writestr(f"{package}/core.py", "class Engine:\\n    def run(self, steps): pass\\n")
    if os.environ.get("FAKE_PIP_MODE") == "hang":
        archive.writestr(f"{package}/big.py", "x = 1\\n" * 100000)
        archive.fp.flush()
        time.sleep(120)  # killed here, the zip half written
    archive.writestr(f"{package}/other.py", "def helper(): pass\\n")
"""


@pytest.fixture
def fake_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CANARY_CACHE_DIR", str(tmp_path / "cache"))
    return install_fake_pip(tmp_path, monkeypatch, FAKE_PIP)


def pip_calls(log: Path) -> list[str]:
    return log.read_text().split()


VERSIONS = [f"1.0.{n}" for n in range(6)]
TAGS = f"""
[packages.toy]
repo = "example/toy"
floor = "1.0.0"
versions = {VERSIONS!r}
"""


def checks(n: int) -> str:
    body = [
        "import pytest",
        "from canary.catalog import check",
        'pytestmark = pytest.mark.upstream("toy")',
    ]
    for i in range(n):
        path = "toy/core.py" if i % 2 else "toy/other.py"
        body.append(
            textwrap.dedent(
                f'''
                @check(reads="{path}", fix="chunked NLL loss")
                def test_{i}(upstream):
                    """Reads {path}."""
                    assert upstream.has_file("{path}")
                '''
            )
        )
    return "\n".join(body)


def test_xdist_workers_share_one_cache_and_download_each_wheel_once(pytester, fake_pip):
    pytester.makefile(".toml", tags=TAGS)
    pytester.makepyfile(test_a=checks(6), test_b=checks(6))
    # Checks outside canary/ make a canary run when a canary option says so.
    run = ("-p", "no:cacheprovider", "-n", "2", "--canary-tags-file=tags.toml")
    result = pytester.runpytest(*run)
    result.assert_outcomes(passed=12 * len(VERSIONS))
    # Seconds added up over parallel fetches read as a bug beside the wall time: say so.
    result.stdout.fnmatch_lines(
        ["time summed over 4 fetch threads in each of 2 workers and the parse processes, "
         "not wall time: * s fetching, * s parsing"]
    )  # fmt: skip
    downloads = fake_pip.read_text().split()
    assert sorted(downloads) == sorted(f"toy=={v}" for v in VERSIONS)  # each exactly once
    # A second run, also parallel, downloads nothing.
    pytester.runpytest(*run).assert_outcomes(passed=72)
    assert len(fake_pip.read_text().split()) == len(VERSIONS)


def test_a_run_killed_mid_download_leaves_nothing_a_later_run_trusts(tmp_path, fake_pip):
    cache = tmp_path / "cache"
    fetch = textwrap.dedent(
        f"""
        from pathlib import Path
        from canary.sources.index import IndexSource
        wheels = Path({str(cache / "wheels")!r})
        IndexSource("toy", "1.0.0", wheel_dir=wheels).fetch(["toy/core.py"])
        """
    )
    # a killed run cannot clean its temporary files: they go to this test's folder
    env = {**os.environ, "FAKE_PIP_MODE": "hang", "TMPDIR": str(tmp_path)}
    child = subprocess.Popen([sys.executable, "-c", fetch], env=env, start_new_session=True)
    deadline = time.monotonic() + 30
    while not list(cache.rglob("*.whl")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(cache.rglob("*.whl")), "the fake pip never started writing"
    time.sleep(0.2)
    os.killpg(child.pid, signal.SIGKILL)  # canary and its pip, as a killed CI job
    child.wait()

    kept = cache / "wheels" / "toy" / "toy-1.0.0.whl"
    assert not kept.exists()
    assert not list(cache.rglob("*.entry"))
    # The next run downloads again and reads the real wheel, not the half-written one.
    from canary.sources.index import IndexSource

    found = IndexSource("toy", "1.0.0", wheel_dir=cache / "wheels").fetch(["toy/other.py"])
    assert found == {"toy/other.py": b"def helper(): pass\n"}
    assert fake_pip.read_text().split() == ["toy==1.0.0", "toy==1.0.0"]
    assert kept.is_file()


# -- offline means offline -------------------------------------------------------------------


def _fill_then_cut_in_half(pytester: pytest.Pytester, cache: Path) -> None:
    """A cache filled by a good run, then every file cut to half its length (a full disk,
    a killed write)."""
    pytester.runpytest("-p", "no:cacheprovider", "--canary-tags-file=tags.toml").assert_outcomes(
        passed=2 * len(VERSIONS)
    )
    for path in cache.rglob("*"):
        if path.is_file() and "locks" not in path.parts:
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def test_offline_with_a_damaged_cache_never_starts_pip_and_names_the_damaged_wheel(
    pytester, fake_pip, monkeypatch
):
    pytester.makefile(".toml", tags=TAGS)
    pytester.makepyfile(test_a=checks(2))
    cache = Path(os.environ["CANARY_CACHE_DIR"])
    _fill_then_cut_in_half(pytester, cache)
    monkeypatch.setenv("FAKE_PIP_MODE", "loud")  # a pip that fails loudly if called
    downloads = pip_calls(fake_pip)

    result = pytester.runpytest("-p", "no:cacheprovider", "--canary-offline")

    assert pip_calls(fake_pip) == downloads  # pip was never started
    result.assert_outcomes(errors=2 * len(VERSIONS))
    wheel = cache / "wheels" / "toy" / "toy-1.0.0.whl"
    result.stdout.fnmatch_lines(
        [
            f"CacheDamaged: --canary-offline: the cached wheel {wheel} is damaged (*) and was "
            f"removed; run the same command without --canary-offline to download toy 1.0.0 again"
        ]
    )
    assert "files: 0 from cache, 0 fetched" in result.stdout.str()


def test_offline_with_damaged_entries_and_no_wheel_names_the_entry_and_what_to_run(
    pytester, fake_pip, monkeypatch
):
    pytester.makefile(".toml", tags=TAGS)
    pytester.makepyfile(test_a=checks(2))
    cache = Path(os.environ["CANARY_CACHE_DIR"])
    _fill_then_cut_in_half(pytester, cache)
    for wheel in (cache / "wheels").rglob("*.whl"):
        wheel.unlink()
    monkeypatch.setenv("FAKE_PIP_MODE", "loud")
    downloads = pip_calls(fake_pip)

    result = pytester.runpytest("-p", "no:cacheprovider", "--canary-offline")

    assert pip_calls(fake_pip) == downloads
    result.assert_outcomes(errors=2 * len(VERSIONS))
    entry = cache / "files" / "index" / "toy" / "1.0.0" / "toy"
    result.stdout.fnmatch_lines(
        [
            f"CacheDamaged: --canary-offline: the cache entry {entry}/*.entry (toy 1.0.0: "
            f"toy/*.py) is damaged (*) and was removed; run the same command "
            f"without --canary-offline to fetch toy 1.0.0 again"
        ]
    )


def test_offline_a_damaged_entry_is_read_again_from_the_kept_wheel_without_pip(
    pytester, fake_pip, monkeypatch
):
    pytester.makefile(".toml", tags=TAGS)
    pytester.makepyfile(test_a=checks(2))
    pytester.runpytest("-p", "no:cacheprovider", "--canary-tags-file=tags.toml").assert_outcomes(
        passed=2 * len(VERSIONS)
    )
    cache = Path(os.environ["CANARY_CACHE_DIR"])
    for entry in (cache / "files").rglob("*.entry"):
        entry.write_bytes(entry.read_bytes()[:-3])
    monkeypatch.setenv("FAKE_PIP_MODE", "loud")
    downloads = pip_calls(fake_pip)

    result = pytester.runpytest("-p", "no:cacheprovider", "--canary-offline")

    result.assert_outcomes(passed=2 * len(VERSIONS))  # the wheel is in the cache: not a miss
    assert pip_calls(fake_pip) == downloads


# -- a dead index ----------------------------------------------------------------------------

MANY = [f"1.0.{n}" for n in range(20)]


def test_a_dead_index_is_tried_a_few_times_then_every_case_errors_at_once_with_one_cause(
    pytester, fake_pip, monkeypatch
):
    monkeypatch.setenv("FAKE_PIP_MODE", "refused")
    pytester.makefile(".toml", tags=TAGS.replace(repr(VERSIONS), repr(MANY)))
    pytester.makepyfile(test_a=checks(4))

    result = pytester.runpytest("-p", "no:cacheprovider", "--canary-workers=1")

    result.assert_outcomes(errors=4 * len(MANY))
    # pip's reason is read: the index was not reached, and after 3 such failures in a row
    # the other 17 releases were not tried.
    assert pip_calls(fake_pip) == [f"toy=={v}" for v in MANY[: index.DOWN_AFTER]]
    output = result.stdout.str()
    assert "has no wheel on the package index" not in output
    result.stdout.fnmatch_lines(
        [
            "80 errors: cannot reach the package index (pip: connection refused): "
            "toy 1.0.0\N{EN DASH}1.0.19 (20 versions)",
        ]
    )
    assert (
        "IndexUnreachable: cannot reach the package index (pip: connection refused): "
        "toy==1.0.19 not tried, after 3 downloads in a row failed the same way"
    ) in result.outlines
    assert (
        result.outlines[-1]
        == "canary: not everything was checked: 80 error(s), no drift in the rest"
    )
    # One line per error in its section and one in the short summary: no tracebacks.
    assert len(output) < 80 * 500
    assert "Traceback" not in output
    assert "raise " not in output


def test_a_version_the_index_lacks_is_its_own_error_and_does_not_call_the_index_down(
    pytester, fake_pip, monkeypatch
):
    monkeypatch.setenv("FAKE_PIP_VERSIONS", "1.0.0,1.0.1")
    pytester.makefile(".toml", tags=TAGS)
    pytester.makepyfile(test_a=checks(2))

    result = pytester.runpytest("-p", "no:cacheprovider", "--canary-workers=1")

    result.assert_outcomes(passed=4, errors=8)
    assert sorted(pip_calls(fake_pip)) == [f"toy=={v}" for v in VERSIONS]  # each was tried
    result.stdout.fnmatch_lines(
        [
            "RefNotFound: toy==1.0.2 has no wheel on the package index: is the version right?*",
            "8 errors: no wheel of that version of toy on the package index: "
            "toy 1.0.2\N{EN DASH}1.0.5 (4 versions)",
        ]
    )


# -- what pip's output says ------------------------------------------------------------------

_RETRY = "WARNING: Retrying (Retry(total=0, ...)) after connection broken by '{}': /simple/toy/"
_GAVE_UP = (
    "ERROR: Could not find a version that satisfies the requirement toy==1.0.0 "
    "(from versions: {})\nERROR: No matching distribution found for toy==1.0.0"
)


@pytest.mark.parametrize(
    ("output", "kind", "reason"),
    [
        (
            _RETRY.format("NewConnectionError('...: [Errno 111] Connection refused')"),
            pipfailure.UNREACHABLE,
            "connection refused",
        ),
        (
            _RETRY.format(
                "NameResolutionError(\"...: Failed to resolve 'index.invalid' ([Errno -2] "
                'Name or service not known)")'
            ),
            pipfailure.UNREACHABLE,
            "DNS lookup failed",
        ),
        (
            "Could not fetch URL https://index.invalid/simple/toy/: There was a problem "
            "confirming the ssl certificate: HTTPSConnectionPool(...): Max retries exceeded "
            "(Caused by SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED]')))",
            pipfailure.UNREACHABLE,
            "TLS error",
        ),
        (
            _RETRY.format("ConnectTimeoutError(..., 'Connection to index timed out.')"),
            pipfailure.UNREACHABLE,
            "timed out",
        ),
        (
            _RETRY.format(
                "ProxyError('Cannot connect to proxy.', OSError('Tunnel connection "
                "failed: 403 Forbidden'))"
            ),
            pipfailure.UNREACHABLE,
            "proxy error",
        ),
        (_GAVE_UP.format("0.9.0, 1.0.1"), pipfailure.NOT_FOUND, "no such version"),
        (_GAVE_UP.format("none"), pipfailure.NO_RELEASES, "no version of the package listed"),
        (
            "ERROR: Cannot install torchvision==0.29.2 because these package versions have "
            "conflicting dependencies.\n\nThe conflict is caused by:\n    The user requested "
            "torchvision==0.29.2\n    The user requested (constraint) torchvision<=0.29.1\n"
            "ERROR: ResolutionImpossible: for help visit https://pip.example/",
            pipfailure.CONSTRAINED,
            "a constraint allows only torchvision<=0.29.1",
        ),
        (  # the same under --quiet, as canary runs it: the conflict's lines are left out
            "ERROR: Cannot install torchvision==0.29.2 because these package versions have "
            "conflicting dependencies.\nERROR: ResolutionImpossible: for help visit ...",
            pipfailure.CONSTRAINED,
            "a constraint rules out torchvision==0.29.2",
        ),
        ("ERROR: THESE PACKAGES DO NOT MATCH THE HASHES", pipfailure.OTHER, "failed"),
    ],
    ids=[
        "refused",
        "dns",
        "tls",
        "timeout",
        "proxy",
        "no such version",
        "none listed",
        "constraint",
        "constraint, quiet",
        "other",
    ],
)
def test_pips_output_tells_an_unreachable_index_from_a_missing_version(output, kind, reason):
    # The unreachable cases end with the same "No matching distribution" as a typo does.
    failure = pipfailure.classify(f"{output}\n{_GAVE_UP.format('none')}")
    if kind in (pipfailure.NOT_FOUND, pipfailure.CONSTRAINED, pipfailure.OTHER):
        failure = pipfailure.classify(output)
    assert (failure.kind, failure.reason) == (kind, reason)


def test_an_index_that_lists_nothing_of_the_package_is_called_down_for_that_package(tmp_path):
    # pip got an answer but no version at all (a mirror without the package, a typo'd
    # index URL serving an empty page): the next release of that package fares no better.
    log = tmp_path / "calls"
    lists_nothing = (
        "import sys; open(sys.argv[1], 'a').write('call\\n'); "
        "sys.exit('ERROR: Could not find a version that satisfies the requirement x "
        "(from versions: none)')"
    )
    health = HostHealth()

    def source(version: str) -> index.IndexSource:
        pip = (sys.executable, "-c", lists_nothing, str(log))
        return index.IndexSource("toy", version, pip=pip, health=health)

    for version in VERSIONS[: index.DOWN_AFTER]:
        with pytest.raises(FetchError, match="lists no wheel of toy at all"):
            source(version).fetch(["toy/core.py"])
    with pytest.raises(IndexUnreachable) as caught:
        source(VERSIONS[-1]).fetch(["toy/core.py"])
    assert caught.value.cause == "the package index lists no wheel of toy at all"
    assert len(log.read_text().split()) == index.DOWN_AFTER  # the last one never ran pip


def test_the_evidence_of_an_unreachable_index_is_the_line_that_says_so_cut_short():
    """An unreachable index's error quotes pip's line that says why, not pip's whole tail:
    pip's retry warnings repeat a long repr once per retry, and every case of a dead index
    prints its error line."""
    retries = "\n".join(
        _RETRY.format(
            "NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object at "
            "0x7f>: Failed to establish a new connection: [Errno 111] Connection refused')"
        )
        for _ in range(5)
    )
    failure = pipfailure.classify(f"{retries}\n{_GAVE_UP.format('none')}")
    assert failure.reason == "connection refused"
    assert "Connection refused" in failure.evidence
    assert len(failure.evidence) <= 210
    assert "\n" not in failure.evidence
