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

pytest_plugins = ["pytester"]

FAKE_PIP = """
import os, sys, time, zipfile
args = sys.argv[1:]
dest, requirement = args[args.index("--dest") + 1], args[-1]
package, version = requirement.split("==")
with open(os.environ["FAKE_PIP_LOG"], "a") as log:
    log.write(requirement + "\\n")
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
    folder = tmp_path / "fake-pip"
    (folder / "pip").mkdir(parents=True)
    (folder / "pip" / "__init__.py").write_text("")
    (folder / "pip" / "__main__.py").write_text(FAKE_PIP)
    log = tmp_path / "pip.log"
    log.write_text("")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])
    )
    monkeypatch.setenv("FAKE_PIP_LOG", str(log))
    monkeypatch.setenv("CANARY_CACHE_DIR", str(tmp_path / "cache"))
    return log


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
    env = {**os.environ, "FAKE_PIP_MODE": "hang"}
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
