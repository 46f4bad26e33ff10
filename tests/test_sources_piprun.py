"""``run_pip``: a warm interpreter runs ``python -m pip`` as a fresh one would.

Every test compares the warm call with ``subprocess.run`` of the same command line, or
checks the one thing a warm interpreter could get wrong (a changed environment, a child
that never ends, an interpreter that died). The real pip downloads from a folder built
here; the other tests run a stand-in ``pip`` from ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from canary.sources import piprun
from canary.sources.piprun import WarmPipDied, WarmPips, run_pip

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="warm pips are Linux only")

PIP = (sys.executable, "-m", "pip")

# Prints what a pip could depend on: how it was started, where, with what, and exits 3.
ECHO_PIP = textwrap.dedent(
    """
    import os, sys
    print("argv0", os.path.basename(sys.argv[0]), "args", sys.argv[1:])
    print("cwd", os.getcwd())
    print("marker", os.environ.get("PIPRUN_MARKER"))
    print("stdin", repr(sys.stdin.read()))
    print("name", __name__, "path0-is-cwd", sys.path[0] in ("", os.getcwd()))
    if os.environ.get("PIPRUN_SHOW_PARENT"):
        sys.stderr.write(f"parent {os.getppid()}\\n")
    sys.stderr.write("to stderr\\n")
    if sys.argv[1:] == ["orphan"] and os.getppid() != int(os.environ["PIPRUN_TEST_PID"]):
        with open(os.environ["PIPRUN_CHILD_PID"], "w") as out:
            out.write(str(os.getpid()))
        os.kill(os.getppid(), 9)  # the warm interpreter dies under its running child
        import time
        time.sleep(60)
    if sys.argv[1:] == ["sleep"]:
        import time
        sys.stdout.flush()
        time.sleep(60)
    sys.exit(3)
    """
)


def fake_pip(folder: Path, script: str) -> str:
    (folder / "pip").mkdir(parents=True)
    (folder / "pip" / "__init__.py").write_text("")
    (folder / "pip" / "__main__.py").write_text(script)
    return str(folder)


@pytest.fixture
def echo_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WarmPips:
    monkeypatch.setenv("PYTHONPATH", fake_pip(tmp_path / "echo", ECHO_PIP))
    monkeypatch.chdir(tmp_path)
    pips = WarmPips(sys.executable)
    yield pips
    pips.close()


def fresh(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PIP, *args], capture_output=True, text=True, check=False)


def same(warm: subprocess.CompletedProcess[str], cold: subprocess.CompletedProcess[str]):
    assert (warm.args, warm.returncode, warm.stdout, warm.stderr) == (
        cold.args,
        cold.returncode,
        cold.stdout,
        cold.stderr,
    )


def test_a_warm_call_prints_and_exits_as_a_fresh_python_m_pip(echo_pip, monkeypatch):
    monkeypatch.setenv("PIPRUN_MARKER", "first")
    args = ["download", "--dest", "out", "toy==1.0"]
    warm = echo_pip.run(args, timeout=60)
    same(warm, fresh(args))
    assert warm.returncode == 3
    assert "marker first" in warm.stdout
    assert "stdin ''" in warm.stdout
    same(echo_pip.run(args, timeout=60), fresh(args))  # the same interpreter, again


def test_a_changed_environment_or_directory_is_what_the_next_call_sees(
    echo_pip, monkeypatch, tmp_path
):
    monkeypatch.setenv("PIPRUN_MARKER", "first")
    assert "marker first" in echo_pip.run(["x"], timeout=60).stdout
    monkeypatch.setenv("PIPRUN_MARKER", "second")
    assert "marker second" in echo_pip.run(["x"], timeout=60).stdout
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    same(echo_pip.run(["x"], timeout=60), fresh(["x"]))
    # PYTHONPATH decides which pip is imported at all: another one is another interpreter.
    monkeypatch.setenv("PYTHONPATH", fake_pip(tmp_path / "other", "print('the other pip')"))
    assert echo_pip.run(["x"], timeout=60).stdout == "the other pip\n"


def test_safe_path_mode_keeps_the_directory_off_sys_path_as_python_m_does(echo_pip, monkeypatch):
    monkeypatch.setenv("PYTHONSAFEPATH", "1")
    warm = echo_pip.run(["x"], timeout=60)
    same(warm, fresh(["x"]))
    # PYTHONSAFEPATH exists from 3.11; 3.10 ignores it, and so must the warm interpreter.
    safe = sys.version_info >= (3, 11)
    assert f"path0-is-cwd {not safe}" in warm.stdout


def test_a_call_past_its_timeout_is_killed_and_the_interpreter_serves_the_next(echo_pip):
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        echo_pip.run(["sleep"], timeout=1)
    assert raised.value.cmd == [*PIP, "sleep"]
    assert "args ['sleep']" in raised.value.output  # what it printed before, as subprocess
    same(echo_pip.run(["x"], timeout=60), fresh(["x"]))


def test_an_interpreter_that_died_is_replaced_by_a_subprocess_for_that_call(echo_pip, monkeypatch):
    monkeypatch.setattr(piprun, "WARM_PIPS", echo_pip)
    echo_pip.run(["x"], timeout=60)
    (warm,) = echo_pip._idle
    warm.process.kill()
    warm.process.wait()
    same(run_pip(PIP, ["x"], timeout=60), fresh(["x"]))
    same(run_pip(PIP, ["x"], timeout=60), fresh(["x"]))


def test_a_child_left_running_by_a_dead_interpreter_is_stopped_before_the_rerun(
    echo_pip, tmp_path, monkeypatch
):
    monkeypatch.setattr(piprun, "WARM_PIPS", echo_pip)
    monkeypatch.setenv("PIPRUN_TEST_PID", str(os.getpid()))
    monkeypatch.setenv("PIPRUN_CHILD_PID", str(tmp_path / "child.pid"))
    same(run_pip(PIP, ["orphan"], timeout=60), fresh(["orphan"]))  # rerun as a subprocess
    orphan = int((tmp_path / "child.pid").read_text())
    stat = Path(f"/proc/{orphan}/stat")
    state = stat.read_text().rsplit(")", 1)[1].split()[0] if stat.exists() else "gone"
    assert state in ("gone", "Z", "X")  # killed (a zombie until init reaps it), not sleeping


def test_a_working_directory_that_is_gone_runs_the_call_as_a_subprocess(
    echo_pip, tmp_path, monkeypatch
):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(WarmPipDied):
        echo_pip.run(["x"], timeout=60)  # run_pip then runs it as subprocess.run would
    monkeypatch.chdir(tmp_path)
    same(echo_pip.run(["x"], timeout=60), fresh(["x"]))


def test_calls_at_the_same_time_each_get_their_own_output(echo_pip):
    with ThreadPoolExecutor(4) as pool:
        done = list(pool.map(lambda n: echo_pip.run([f"call-{n}"], timeout=60), range(12)))
    for n, result in enumerate(done):
        assert f"args ['call-{n}']" in result.stdout
    assert len(echo_pip._idle) <= 4


def test_without_pip_the_error_is_the_one_python_m_pip_gives(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # a pip package that is not a package
    (tmp_path / "pip.py").write_text("raise ImportError('No module named pip')\n")
    result = run_pip(PIP, ["download", "x"], timeout=60)
    assert result.returncode == 1
    assert "No module named pip" in result.stderr


def build_wheel(folder: Path, name: str, version: str) -> Path:
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(f"{name}/__init__.py", f"__version__ = {version!r}\n")
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\n"
                                             f"Version: {version}\n")  # fmt: skip
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                                          "Tag: py3-none-any\n")  # fmt: skip
        archive.writestr(f"{info}/RECORD", "")
    return wheel


def test_the_real_pip_downloads_through_run_pip_as_through_a_subprocess(tmp_path, monkeypatch):
    links = tmp_path / "links"
    links.mkdir()
    built = build_wheel(links, "canarytoy", "1.0")
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # not this machine's configuration
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    common = ["download", "--no-deps", "--only-binary=:all:", "--no-input", "--quiet"]

    done = run_pip(PIP, [*common, "--dest", str(tmp_path / "a"), "canarytoy==1.0"], timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "a" / built.name).read_bytes() == built.read_bytes()

    missing = [*common, "--dest", str(tmp_path / "b"), "canarytoy==2.0"]
    warm, cold = run_pip(PIP, missing, timeout=120), fresh(missing)
    assert warm.returncode == cold.returncode == 1
    assert "No matching distribution found for canarytoy==2.0" in warm.stderr
    assert warm.stderr == cold.stderr


def test_canary_warm_pip_0_runs_every_call_as_a_fresh_subprocess(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", fake_pip(tmp_path / "echo", ECHO_PIP))
    monkeypatch.setenv("PIPRUN_SHOW_PARENT", "1")
    started_here = f"parent {os.getpid()}"
    assert started_here not in run_pip(PIP, ["x"], timeout=60).stderr  # a warm one's child
    monkeypatch.setenv("CANARY_WARM_PIP", "0")
    assert started_here in run_pip(PIP, ["x"], timeout=60).stderr
