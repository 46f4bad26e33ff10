"""The runner's orchestration, table and command line, offline: every subprocess is faked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from runtime_fakes import JUNIT, PINS, PROJECT, PYTHON, FakeInstaller, make_set

from canary.runtime import installer, runner
from canary.runtime.installer import Installer
from canary.runtime.junit import Counts
from canary.runtime.pins import PinSet
from canary.runtime.process import Command, Completed
from canary.runtime.runner import (
    FAILED,
    INSTALL_ERROR,
    OK,
    SKIPPED,
    Context,
    SetResult,
    exit_status,
    judge,
    render_table,
    run_set,
)
from canary.runtime.venv import venv_python


@pytest.mark.parametrize(
    ("returncode", "counts", "status"),
    [
        (0, Counts(passed=3, skipped=1), OK),
        (1, Counts(passed=3, failed=1, problems=("FAILED x: y",)), FAILED),
        (1, Counts(passed=3, errors=1), FAILED),
        (5, Counts(), runner.ERROR),
        (0, Counts(), runner.ERROR),
        (2, Counts(passed=3), runner.ERROR),
        (1, Counts(passed=3), runner.ERROR),
    ],
)
def test_judge(returncode, counts, status):
    assert judge(returncode, counts)[0] == status


def test_render_table():
    ok = SetResult(
        make_set("oldest"),
        OK,
        installed={**PINS, "torch": "2.13.0+cpu"},
        counts=Counts(passed=10, skipped=2),
        install_seconds=0.01,
        reused=True,
        test_seconds=42.25,
    )
    broken = SetResult(make_set("newest"), INSTALL_ERROR, detail="resolver: no")
    lines = render_table([ok, broken]).splitlines()
    assert len(lines) == 4
    assert lines[0].split("|")[1].strip() == "pin set"
    assert set(lines[1]) == {"|", "-"}
    cells = [cell.strip() for cell in lines[2].strip("|").split("|")]
    assert cells == [
        "oldest", "2.13.0+cpu", "4.57.6", "0.25.1", "0.17.1", "1.13.0", "4.5.0",
        "10", "0", "2", "0", "0.0 (reused)", "42.2", "ok",
    ]  # fmt: skip
    cells = [cell.strip() for cell in lines[3].strip("|").split("|")]
    assert cells[1] == "2.13.0"  # the pin when nothing was installed
    assert cells[7:] == ["-", "-", "-", "-", "-", "-", "INSTALL ERROR"]
    assert len({len(line) for line in lines}) == 1


def test_exit_status():
    ok = SetResult(make_set(), OK)
    assert exit_status([ok]) == 0
    assert exit_status([ok, SetResult(make_set(), SKIPPED)]) == 0
    assert exit_status([SetResult(make_set(), SKIPPED)]) == 1  # nothing ran
    assert exit_status([]) == 1
    for bad in (FAILED, runner.ERROR, INSTALL_ERROR):
        assert exit_status([ok, SetResult(make_set(), bad)]) == 1


def write_junit(command: Command, xml: str = JUNIT, returncode: int = 1) -> Completed:
    junit = next(a for a in command.argv if a.startswith("--junitxml="))
    Path(junit.split("=", 1)[1]).write_text(xml)
    return Completed(returncode, "pytest output\n")


def context(tmp_path: Path, fake: FakeInstaller, **kwargs) -> Context:
    return Context(
        root=tmp_path / "venvs",
        reports=tmp_path / "reports",
        repo=tmp_path,
        python=PYTHON,
        installer=Installer(uv="/bin/uv"),
        project=PROJECT,
        run=fake,
        environ={"PATH": "/bin", "PYTHONPATH": "/leak", "HF_HUB_OFFLINE": "0"},
        log=lambda message: None,
        **kwargs,
    )


def test_run_set_runs_pytest_offline_in_the_venv(tmp_path):
    fake = FakeInstaller()
    fake.pytest = write_junit
    result = run_set(make_set(), context(tmp_path, fake, pytest_args=("-k", "chunked")))
    assert result.status == FAILED
    assert result.counts.failed == 2
    assert "FAILED canary.runtime.test_a::test_bad" in result.detail
    assert result.installed["torch"] == "2.13.0+cpu"
    command = fake.calls[-1]
    venv = tmp_path / "venvs" / next(p.name for p in (tmp_path / "venvs").iterdir())
    assert command.argv[:4] == (str(venv_python(venv)), "-m", "pytest", "canary/runtime")
    assert command.argv[4:6] == ("-p", "no:cacheprovider")
    assert command.argv[-2:] == ("-k", "chunked")
    assert command.cwd == tmp_path
    assert command.env["HF_HUB_OFFLINE"] == "1"
    assert command.env["TRANSFORMERS_OFFLINE"] == command.env["HF_DATASETS_OFFLINE"] == "1"
    assert command.env["VIRTUAL_ENV"] == str(venv)
    assert "PYTHONPATH" not in command.env
    assert (tmp_path / "reports" / "oldest.log").read_text() == "pytest output\n"


def test_run_set_green_and_reused(tmp_path):
    fake = FakeInstaller()
    green = '<testsuite><testcase classname="c" name="t"/></testsuite>'
    fake.pytest = lambda command: write_junit(command, green, returncode=0)
    ctx = context(tmp_path, fake)
    assert run_set(make_set(), ctx).status == OK
    again = run_set(make_set(), ctx)
    assert again.status == OK
    assert again.reused
    assert again.counts.passed == 1


def test_run_set_reports_install_and_crash_errors(tmp_path):
    result = run_set(make_set(), context(tmp_path, FakeInstaller(install_rc=1)))
    assert result.status == INSTALL_ERROR
    assert "resolver: no" in result.detail
    assert result.counts is None

    fake = FakeInstaller()
    fake.pytest = lambda command: Completed(3, "INTERNALERROR> boom\n")
    result = run_set(make_set(), context(tmp_path, fake))
    assert result.status == runner.ERROR
    assert "pytest exited 3 without a report" in result.detail
    assert "INTERNALERROR> boom" in result.detail


def test_run_set_skips_a_set_for_another_python(tmp_path):
    pin_set = PinSet("newest", "s", make_set().pins, runtime_spec(">=3.12"))
    fake = FakeInstaller()
    result = run_set(pin_set, context(tmp_path, fake))
    assert result.status == SKIPPED
    assert "needs Python >=3.12" in result.detail
    assert fake.calls == []


def runtime_spec(text: str):
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(text)


def test_main_prints_the_table_and_fails_on_failures(tmp_path, monkeypatch, capsys):
    tags = tmp_path / "tags.toml"
    pins = ", ".join(f'{k} = "{v}"' for k, v in PINS.items())
    tags.write_text(
        f'[runtime.oldest]\nsummary = "o"\npins = {{ {pins} }}\n'
        f'[runtime.newest]\nsummary = "n"\npins = {{ {pins} }}\n'
    )
    monkeypatch.setenv("CANARY_CACHE_DIR", str(tmp_path / "cache"))
    for name in [name for name in os.environ if name.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setattr(installer, "find_uv", lambda: "/bin/uv")
    fake = FakeInstaller()
    outcomes = {"oldest": (JUNIT, 1), "newest": ('<testsuite><testcase name="t"/></testsuite>', 0)}

    def pytest_run(command: Command) -> Completed:
        junit = next(arg for arg in command.argv if arg.startswith("--junitxml="))
        name = Path(junit.split("=", 1)[1]).stem
        return write_junit(command, *outcomes[name])

    fake.pytest = pytest_run

    def run(command: Command) -> Completed:
        if command.argv[1:] == ("-m", "pip", "config", "list"):
            return Completed(0, "global.find-links='/srv/wheels'\n")
        return fake(command)

    assert runner.main(["--tags", str(tags), "--pins", "newest"], run=run) == 0
    out = capsys.readouterr().out
    assert "| newest" in out
    assert "| ok" in out
    installs = [c.argv for c in fake.calls if "install" in c.argv]
    assert "/srv/wheels" in installs[0]

    assert runner.main(["--tags", str(tags), "--", "-x"], run=run) == 1
    out = capsys.readouterr().out
    assert out.count("| FAILED") == 1
    assert "[oldest] FAILED: FAILED canary.runtime.test_a::test_bad" in out
    pytest_calls = [c.argv for c in fake.calls if c.argv[2:3] == ("pytest",)]
    assert [argv[-1] for argv in pytest_calls][-2:] == ["-x", "-x"]

    assert runner.main(["--tags", str(tags), "--list"], run=run) == 0
    assert "built:" in capsys.readouterr().out


def test_main_config_errors_exit_2(tmp_path, capsys):
    assert runner.main(["--tags", str(tmp_path / "nope.toml")]) == 2
    assert "file not found" in capsys.readouterr().err
