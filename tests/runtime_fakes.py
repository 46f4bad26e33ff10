"""Shared by the runtime runner's tests: pins, a fake interpreter, a fake installer.

Nothing here builds a venv: :class:`FakeInstaller` plays uv, pip and the venv's python.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from canary.runtime.pins import PinSet, parse_pin_sets
from canary.runtime.process import Command, Completed
from canary.runtime.venv import Python, venv_python

PINS = {
    "torch": "2.13.0",
    "transformers": "4.57.6",
    "trl": "0.25.1",
    "peft": "0.17.1",
    "accelerate": "1.13.0",
    "datasets": "4.5.0",
}
PYTHON = Python(executable="/usr/bin/python3.11", version="3.11.7 (main) [GCC]")
PROJECT = {"name": "canary", "dependencies": ["pytest>=7.4"]}


def make_set(name: str = "oldest", **overrides: str) -> PinSet:
    return parse_pin_sets({name: {"summary": "s", "pins": {**PINS, **overrides}}}, "t.toml")[name]


class FakeInstaller:
    """Plays uv/pip/python: creates the venv folder, records installs, answers the probe."""

    def __init__(self, *, install_rc: int = 0, installed: dict | None = None) -> None:
        self.calls: list[Command] = []
        self.install_rc = install_rc
        self.installed = installed
        self.pytest: Callable[[Command], Completed] | None = None
        self.requested: dict[str, str] = {}

    def __call__(self, command: Command) -> Completed:
        self.calls.append(command)
        argv = command.argv
        if "venv" in argv:
            python = venv_python(Path(argv[-1]))
            python.parent.mkdir(parents=True)
            python.write_text("")
            return Completed(0, "")
        if "install" in argv:
            self.requested = dict(arg.split("==") for arg in argv if "==" in arg)
            return Completed(self.install_rc, "" if self.install_rc == 0 else "resolver: no\n")
        if "-c" in argv:
            names = argv[argv.index("-c") + 2 :]
            found = self.installed or {name: self.requested.get(name) for name in names}
            if "torch" in found and found["torch"] == "2.13.0":
                found["torch"] = "2.13.0+cpu"  # a local version satisfies the ==2.13.0 pin
            return Completed(0, "noise\n" + json.dumps(found))
        if "pytest" in argv and self.pytest:
            return self.pytest(command)
        raise AssertionError(f"unexpected command {argv}")

    def kinds(self) -> list[str]:
        return [
            "create" if "venv" in c.argv else "install" if "install" in c.argv else "probe"
            for c in self.calls
        ]


JUNIT = """\
<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="6">
  <testcase classname="canary.runtime.test_a" name="test_ok" time="0.1"/>
  <testcase classname="canary.runtime.test_a" name="test_ok2" time="0.1"/>
  <testcase classname="canary.runtime.test_a" name="test_bad" time="0.1">
    <failure message="AssertionError: 1.0 != 2.0">long traceback</failure>
  </testcase>
  <testcase classname="canary.runtime.test_a" name="test_gpu" time="0">
    <skipped type="pytest.skip" message="gpu case"/>
  </testcase>
  <testcase classname="canary.runtime.test_a" name="test_xfail" time="0">
    <skipped type="pytest.xfail" message="known broken"/>
  </testcase>
  <testcase classname="canary.runtime.test_b" name="test_fixture" time="0">
    <error message="failed on setup with &quot;OSError&quot;">trace</error>
  </testcase>
  <testcase classname="canary.runtime.test_b" name="test_both" time="0">
    <failure message="boom"/><error message="teardown"/>
  </testcase>
</testsuite></testsuites>
"""
