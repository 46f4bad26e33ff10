"""Running ``python -m pip``, from an interpreter that imported pip once.

A cold run downloads one wheel per release (146 of them for tags.toml), and each
``python -m pip download`` spends about half a CPU-second importing pip before it asks the
index anything: a third of all the CPU a cold run uses on a 2-core machine. On Linux,
:func:`run_pip` keeps a few *warm* interpreters instead. Each one is started with the same
command line, environment and working directory as ``python -m pip`` would be, imports
pip's download command, and then forks one child per call. The child runs pip's own
``__main__`` exactly as ``-m`` does (``runpy``), with its output in files and its exit code
returned, so what pip reads (the user's configuration, environment, certificates) and what
it prints are what a fresh ``python -m pip`` would read and print.

Anything else (another pip command line, another platform, a warm interpreter that died,
``CANARY_WARM_PIP=0``) runs as a plain subprocess. Both return what
``subprocess.run(capture_output=True, text=True, timeout=...)`` returns and raise what it
raises.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

# Run inside a warm interpreter (``python -c``). It answers one JSON line per request
# ({"pid"} before the child runs anything, then {"returncode"} or {"timeout"}) and ends at EOF.
_WARM_MAIN = r"""
import json, os, runpy, signal, sys, time

# Ctrl-C reaches the whole process group: the pip running now stops as a fresh one would,
# and this interpreter waits for canary to close its input.
signal.signal(signal.SIGINT, signal.SIG_IGN)

# As `python -m pip` starts: its directory first on sys.path (`-c` puts "" there) while
# the pip package itself is found, then removed, as pip's own __main__ removes it before
# importing the rest; each child puts it back and runs that __main__.
prefixed = not getattr(sys.flags, "safe_path", False)  # -P / PYTHONSAFEPATH: no directory
if prefixed:
    sys.path[0] = os.getcwd()
# Warming only: what is missing (another pip, no pip at all) is imported, or fails, in the
# child, as it would in `python -m pip`.
try:
    import pip
except Exception:
    pass
first_path = sys.path.pop(0) if prefixed else None
for name in (
    "pip._internal.cli.main",
    "pip._internal.cli.main_parser",
    "pip._internal.commands.download",
    "pip._internal.resolution.resolvelib.resolver",
    "pip._internal.metadata.importlib",
):
    try:
        __import__(name)
    except Exception:
        pass

channel_in, channel_out = sys.stdin, sys.stdout


def child(request):
    signal.signal(signal.SIGINT, signal.default_int_handler)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        out = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(out, fd)
        os.close(out)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    sys.argv = ["", *request["args"]]
    if first_path is not None:
        sys.path.insert(0, first_path)
    try:
        runpy.run_module("pip", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = stop.code
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


def wait(pid, timeout):
    deadline = time.monotonic() + timeout
    pause = 0.002
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return {"returncode": os.waitstatus_to_exitcode(status)}
        if time.monotonic() >= deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return {"timeout": True}
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


print(json.dumps({"ready": True}), file=channel_out, flush=True)
for line in channel_in:
    request = json.loads(line)
    # The child runs nothing until canary has its pid: a pip that ended this interpreter
    # before then would run on where canary cannot see, let alone stop, it.
    gate_in, gate_out = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(gate_out)
        if not os.read(gate_in, 1):  # this interpreter died before saying the pid
            os._exit(1)
        os.close(gate_in)
        child(request)
    os.close(gate_in)
    print(json.dumps({"pid": pid}), file=channel_out, flush=True)
    os.write(gate_out, b"1")
    os.close(gate_out)
    print(json.dumps(wait(pid, request["timeout"])), file=channel_out, flush=True)
"""


class WarmPipDied(Exception):
    """No warm interpreter could run the call (none could start, one ended or answered
    nonsense, no working directory, no room for its output): :func:`run_pip` runs it as
    a subprocess."""


class _WarmPip:
    """One warm interpreter: started like ``python -m pip``, serving one call at a time."""

    def __init__(self, python: str, environment: tuple[tuple[str, str], ...], cwd: str) -> None:
        self.environment = environment
        self.cwd = cwd
        self.process = subprocess.Popen(
            [python, "-c", _WARM_MAIN],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=dict(environment),
            cwd=cwd,
            text=True,
        )
        try:
            self._expect("ready")
        except WarmPipDied:
            self.close()
            raise

    def run(self, args: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        with tempfile.TemporaryDirectory(prefix="canary-pip-") as folder:
            stdout, stderr = Path(folder, "stdout"), Path(folder, "stderr")
            stdout.touch()
            stderr.touch()
            request = {
                "args": list(args),
                "stdout": str(stdout),
                "stderr": str(stderr),
                "timeout": timeout,
            }
            self._send(request)
            pid = self._expect("pid")
            try:
                answer = self._answer()
            except WarmPipDied:
                # Its child lives on without it: stop it before the call runs again.
                _kill_and_wait(pid)
                raise
            out, err = _text(stdout), _text(stderr)
        command = [self.process.args[0], "-m", "pip", *args]
        if "timeout" in answer:
            raise subprocess.TimeoutExpired(command, timeout, output=out, stderr=err)
        if not isinstance(answer.get("returncode"), int):
            raise WarmPipDied(f"unexpected answer {answer!r}")
        return subprocess.CompletedProcess(command, answer["returncode"], out, err)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def _send(self, request: dict) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except OSError as exc:
            raise WarmPipDied(f"cannot write to it: {exc}") from None

    def _answer(self) -> dict:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise WarmPipDied(f"it ended (exit {self.process.poll()})")
        try:
            answer = json.loads(line)
        except ValueError:
            raise WarmPipDied(f"it printed {line[:200]!r}") from None
        if not isinstance(answer, dict):
            raise WarmPipDied(f"it printed {line[:200]!r}")
        return answer

    def _expect(self, key: str) -> int:
        answer = self._answer()
        if not isinstance(answer.get(key), (bool, int)):
            raise WarmPipDied(f"expected {key!r}, got {answer!r}")
        return int(answer[key])


class WarmPips:
    """Warm interpreters for one Python, one per call running at the same time.

    A warm interpreter serves only calls made with the environment and working directory
    it was started with, since those decide which pip it imported (``PYTHONPATH``, a
    virtual environment) and what that pip reads; when they change, the old ones end.
    """

    def __init__(self, python: str) -> None:
        self.python = python
        self._idle: list[_WarmPip] = []
        self._lock = threading.Lock()

    def run(self, args: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        """As :func:`run_pip`, or WarmPipDied (the interpreter that failed is closed)."""
        environment = tuple(sorted(os.environ.items()))
        try:
            cwd = os.getcwd()
        except OSError:
            raise WarmPipDied("the working directory is gone") from None
        warm = self._take(environment, cwd)
        try:
            done = warm.run(args, timeout)
        except subprocess.TimeoutExpired:
            self._give_back(warm)
            raise
        except WarmPipDied:
            warm.close()
            raise
        except OSError as exc:  # no room for its output files, say
            warm.close()
            raise WarmPipDied(str(exc)) from None
        self._give_back(warm)
        return done

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for warm in idle:
            warm.close()

    def _take(self, environment: tuple[tuple[str, str], ...], cwd: str) -> _WarmPip:
        stale = []
        with self._lock:
            for warm in list(self._idle):
                if warm.environment != environment or warm.cwd != cwd:
                    self._idle.remove(warm)
                    stale.append(warm)
            found = self._idle.pop() if self._idle else None
        for warm in stale:
            warm.close()
        if found is not None:
            return found
        try:
            return _WarmPip(self.python, environment, cwd)
        except OSError as exc:
            raise WarmPipDied(f"cannot start {self.python}: {exc}") from None

    def _give_back(self, warm: _WarmPip) -> None:
        if warm.process.poll() is not None:
            return
        with self._lock:
            self._idle.append(warm)


# Linux only: forking an interpreter that imported pip is safe there; elsewhere (macOS
# frameworks, Windows without fork) every call is a subprocess.
WARM_PIPS = WarmPips(sys.executable) if sys.platform == "linux" else None
if WARM_PIPS is not None:
    # They would end anyway when canary's end closes their input; this waits for them.
    atexit.register(WARM_PIPS.close)


def run_pip(
    command: Sequence[str], args: Sequence[str], *, timeout: float
) -> subprocess.CompletedProcess[str]:
    """``command + args`` with its output captured as text, as ``subprocess.run`` runs it;
    raises OSError when the command cannot start and TimeoutExpired after ``timeout``.
    ``command`` that is this interpreter's ``-m pip`` runs in a warm interpreter, unless
    ``CANARY_WARM_PIP=0`` asks for a fresh one every time."""
    warm = WARM_PIPS is not None and os.environ.get("CANARY_WARM_PIP", "1") != "0"
    if warm and tuple(command) == (WARM_PIPS.python, "-m", "pip"):
        try:
            return WARM_PIPS.run(args, timeout)
        except WarmPipDied:
            pass  # the subprocess runs it, and says why if anything is wrong
    return _subprocess([*command, *args], timeout)


def _subprocess(command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def _text(path: Path) -> str:
    return path.read_bytes().decode(errors="replace")


def _kill_and_wait(pid: int, wait: float = 10.0) -> None:
    """Kill ``pid``, not our child, and wait until it has exited: a kill is delivered
    asynchronously, and a pip still running would write the folder the rerun writes."""
    try:
        handle = os.pidfd_open(pid)
    except (OSError, AttributeError):  # gone already, or no pidfds: a plain kill is all there is
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        return
    try:
        signal.pidfd_send_signal(handle, signal.SIGKILL)
        select.select([handle], [], [], wait)  # readable once the process has exited
    except OSError:
        pass
    finally:
        os.close(handle)
