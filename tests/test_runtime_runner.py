"""The runtime runner's machinery, offline: no venv is built, every subprocess is faked."""

from __future__ import annotations

import json
import os
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from canary.errors import ConfigError, InfrastructureError
from canary.runtime import runner
from canary.runtime.pins import PinSet, load_pin_sets, parse_pin_sets, select
from canary.runtime.runner import (
    FAILED,
    INSTALL_ERROR,
    OK,
    SKIPPED,
    Command,
    Completed,
    Context,
    Counts,
    Installer,
    Python,
    SetResult,
    ensure_venv,
    exit_status,
    judge,
    parse_junit,
    parse_pip_config,
    render_table,
    run_set,
    uv_index_settings,
    venv_digest,
    venv_python,
)

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


# --- pins -------------------------------------------------------------------------------


def test_pin_set_parses_and_normalises_names():
    pin_set = parse_pin_sets(
        {"oldest": {"summary": " oldest ", "pins": {**PINS, "Safe_Tensors": "0.8.0"}}}, "t.toml"
    )["oldest"]
    assert pin_set.summary == "oldest"
    assert list(pin_set.pins) == sorted(pin_set.pins)
    assert "safe-tensors==0.8.0" in pin_set.requirements()
    assert "torch==2.13.0" in pin_set.requirements()


def test_missing_torch_says_why_it_must_be_pinned():
    pins = {k: v for k, v in PINS.items() if k != "torch"}
    with pytest.raises(ConfigError) as excinfo:
        parse_pin_sets({"oldest": {"summary": "s", "pins": pins}}, "tags.toml")
    message = str(excinfo.value)
    assert "tags.toml: [runtime.oldest]" in message
    assert "torch" in message
    assert "CUDA" in message


@pytest.mark.parametrize("value", [">=4.57", "==4.57.6", "4.57.*", "latest", 4.57, ""])
def test_pins_must_be_exact_versions(value):
    with pytest.raises(ConfigError, match=r"tags\.toml: \[runtime\.oldest\]: pins\.transformers"):
        parse_pin_sets(
            {"oldest": {"summary": "s", "pins": {**PINS, "transformers": value}}}, "tags.toml"
        )


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ({"summary": "s", "pins": PINS, "python": "3.11"}, r"unknown key\(s\) \['python'\]"),
        ({"pins": PINS}, "summary must be a non-empty string"),
        ({"summary": "s"}, "pins must be a table"),
        ({"summary": "s", "pins": {**PINS, "PEFT": "0.17.1"}}, "peft is pinned twice"),
        ({"summary": "s", "pins": {**PINS, "no good": "1.0"}}, "not a valid package name"),
        ({"summary": "s", "pins": PINS, "requires-python": "3.11+"}, "requires-python"),
    ],
)
def test_bad_pin_set_tables_name_the_key(table, expected):
    with pytest.raises(ConfigError, match=expected):
        parse_pin_sets({"oldest": table}, "tags.toml")


def test_runtime_holds_only_tables_with_folder_safe_names():
    with pytest.raises(ConfigError, match="key 'default' is not a pin set table"):
        parse_pin_sets({"default": "oldest"}, "tags.toml")
    with pytest.raises(ConfigError, match="name must match"):
        parse_pin_sets({"Old Set": {"summary": "s", "pins": PINS}}, "tags.toml")
    with pytest.raises(ConfigError, match="at least one"):
        parse_pin_sets({}, "tags.toml")


def test_load_pin_sets_reads_the_file(tmp_path):
    path = tmp_path / "tags.toml"
    path.write_text(
        textwrap.dedent(
            """
            [packages.x]
            repo = "a/b"

            [runtime.newest]
            summary = "newest"
            requires-python = ">=3.11"
            [runtime.newest.pins]
            torch = "2.13.0"
            transformers = "5.24.0"
            trl = "1.16.0"
            peft = "0.21.2"
            accelerate = "1.16.0"
            datasets = "5.2.0"
            """
        )
    )
    (newest,) = load_pin_sets(path).values()
    assert newest.pins["transformers"] == "5.24.0"
    assert newest.python_mismatch("3.10.14") == "needs Python >=3.11, this is 3.10.14"
    assert newest.python_mismatch("3.11.7") is None


def test_load_pin_sets_errors(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_pin_sets(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("[runtime\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_pin_sets(tmp_path / "bad.toml")
    (tmp_path / "none.toml").write_text("[packages.x]\n")
    with pytest.raises(ConfigError, match=r"none\.toml: no \[runtime\] section"):
        load_pin_sets(tmp_path / "none.toml")


def test_select():
    sets = {"a": make_set("a"), "b": make_set("b")}
    assert [s.name for s in select(sets, "all")] == ["a", "b"]
    assert [s.name for s in select(sets, "b,a,b")] == ["b", "a"]
    with pytest.raises(ConfigError, match="unknown pin set"):
        select(sets, "c")
    with pytest.raises(ConfigError, match="at least one"):
        select(sets, " , ")


# --- pip configuration -> uv ------------------------------------------------------------

PIP_CONFIG_LIST = """\
:env:.default-timeout='180'
:env:.find-links='/srv/wheels'
global.cert='/etc/ssl/ca.pem'
global.constraint='/etc/pip/constraints.txt'
global.extra-index-url='file:///srv/a/simple file:///srv/b/simple'
global.find-links='/ignored/because/env/wins'
global.index-url='https://mirror.example/simple'
install.index-url='https://install.example/simple'
download.index-url='https://download-only.example/simple'
"""


def test_parse_pip_config_applies_pip_precedence():
    settings = parse_pip_config(PIP_CONFIG_LIST)
    assert settings["index-url"] == "https://install.example/simple"  # [install] over [global]
    assert settings["find-links"] == "/srv/wheels"  # PIP_* over files
    assert settings["extra-index-url"] == "file:///srv/a/simple file:///srv/b/simple"
    assert settings["default-timeout"] == "180"


def test_pip_variables_count_even_when_pip_config_list_is_silent():
    settings = parse_pip_config("", {"PIP_INDEX_URL": "https://env.example/simple", "HOME": "/"})
    assert settings == {"index-url": "https://env.example/simple"}


def test_uv_gets_pips_indexes_find_links_and_constraints():
    index = uv_index_settings(parse_pip_config(PIP_CONFIG_LIST), environ={})
    args = list(index.args)
    assert args[args.index("--index-url") + 1] == "https://install.example/simple"
    extras = [args[i + 1] for i, arg in enumerate(args) if arg == "--extra-index-url"]
    assert extras == ["file:///srv/a/simple", "file:///srv/b/simple"]
    # pip's semantics: best version across all indexes, not uv's first index that has it.
    assert args[args.index("--index-strategy") + 1] == "unsafe-best-match"
    assert args[args.index("--find-links") + 1] == "/srv/wheels"
    assert args[args.index("--constraint") + 1] == "/etc/pip/constraints.txt"
    assert index.env == {"SSL_CERT_FILE": "/etc/ssl/ca.pem", "UV_HTTP_TIMEOUT": "180"}


def test_uv_settings_leave_the_users_own_variables_alone():
    pip = {"cert": "/a.pem", "timeout": "5", "proxy": "http://proxy.example:3128"}
    index = uv_index_settings(pip, environ={"SSL_CERT_FILE": "/b.pem", "HTTPS_PROXY": "x"})
    assert index.env == {"UV_HTTP_TIMEOUT": "5"}
    assert uv_index_settings({"no-index": "true", "trusted-host": "h1 h2"}, {}).args == (
        "--no-index",
        "--allow-insecure-host",
        "h1",
        "--allow-insecure-host",
        "h2",
    )
    assert uv_index_settings({}, {}).args == ()


def test_choose_installer_reads_pip_config_for_uv_only(monkeypatch):
    calls = []

    def run(command: Command) -> Completed:
        calls.append(command.argv)
        return Completed(0, "global.find-links='/srv/wheels'\n")

    installer = runner.choose_installer("auto", run, {}, uv="/bin/uv")
    assert installer.name == "uv"
    assert installer.index.args == ("--find-links", "/srv/wheels")
    assert calls[0][1:] == ("-m", "pip", "config", "list")
    assert runner.choose_installer("pip", run, {}).name == "pip"
    monkeypatch.setattr(runner, "find_uv", lambda: None)
    assert runner.choose_installer("auto", run, {}).name == "pip"
    with pytest.raises(ConfigError, match="uv is not installed"):
        runner.choose_installer("uv", run, {})


def test_installer_commands(tmp_path):
    venv, repo = tmp_path / "v", tmp_path / "repo"
    uv = Installer(uv="/bin/uv", index=runner.IndexSettings(args=("--find-links", "/w")))
    create = uv.create(venv, "/usr/bin/python3")
    assert create.argv[:2] == ("/bin/uv", "venv")
    assert "--relocatable" in create.argv
    install = uv.install(venv, ["torch==2.13.0"], repo).argv
    assert install[:3] == ("/bin/uv", "pip", "install")
    assert "--compile-bytecode" in install
    assert install[-4:] == ("/w", "torch==2.13.0", "-e", str(repo))
    pip = Installer(uv=None)
    assert pip.create(venv, "/usr/bin/python3").argv == (
        "/usr/bin/python3",
        "-m",
        "venv",
        str(venv),
    )
    assert pip.install(venv, ["torch==2.13.0"], repo).argv[:4] == (
        str(venv_python(venv)),
        "-m",
        "pip",
        "install",
    )


# --- venv identity, build, reuse ----------------------------------------------------------


def test_venv_digest_covers_pins_python_and_project_only():
    base = venv_digest(make_set(), PYTHON, PROJECT)
    assert base == venv_digest(make_set(), PYTHON, PROJECT)
    assert len(base) == 12
    renamed_summary = PinSet("oldest", "other words", make_set().pins)
    assert venv_digest(renamed_summary, PYTHON, PROJECT) == base
    assert venv_digest(make_set(trl="0.26.2"), PYTHON, PROJECT) != base
    assert venv_digest(make_set(), Python("/other/python", PYTHON.version), PROJECT) != base
    assert venv_digest(make_set(), Python(PYTHON.executable, "3.11.8"), PROJECT) != base
    assert venv_digest(make_set(), PYTHON, {**PROJECT, "dependencies": []}) != base


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


def build(fake: FakeInstaller, root: Path, pin_set: PinSet | None = None, **kwargs):
    pin_set = pin_set or make_set()
    return ensure_venv(
        pin_set,
        root=root,
        digest=venv_digest(pin_set, PYTHON, PROJECT),
        repo=root.parent,
        python=PYTHON,
        installer=Installer(uv="/bin/uv"),
        run=fake,
        environ={"PATH": "/bin"},
        **kwargs,
    )


def test_build_then_reuse_then_rebuild(tmp_path):
    root = tmp_path / "venvs"
    fake = FakeInstaller()
    first = build(fake, root)
    assert not first.reused
    assert fake.kinds() == ["create", "install", "probe"]
    assert first.installed["torch"] == "2.13.0+cpu"
    assert first.path.parent == root
    assert first.path.name.startswith("oldest-")
    assert json.loads((first.path / runner.MARKER).read_text())["pins"]["trl"] == "0.25.1"
    assert [p.name for p in root.iterdir()] == [first.path.name]  # no build folder left

    second = build(fake, root)
    assert second.reused
    assert second.path == first.path
    assert second.installed == first.installed
    assert len(fake.calls) == 3  # nothing ran

    third = build(fake, root, rebuild=True)
    assert not third.reused
    assert len(fake.calls) == 6
    assert [p.name for p in root.iterdir()] == [first.path.name]


def test_new_pins_build_a_new_venv_and_drop_the_old_one(tmp_path):
    root = tmp_path / "venvs"
    old = build(FakeInstaller(), root)
    other = build(FakeInstaller(), root, make_set("other"))
    new = build(FakeInstaller(), root, make_set(trl="0.26.2"))
    assert new.path != old.path
    assert sorted(p.name for p in root.iterdir()) == sorted([new.path.name, other.path.name])


def test_a_folder_without_marker_is_never_reused(tmp_path):
    # What a build killed mid-install would look like had it been built in place.
    root = tmp_path / "venvs"
    pin_set = make_set()
    final = runner.venv_dir(root, pin_set, venv_digest(pin_set, PYTHON, PROJECT))
    venv_python(final).parent.mkdir(parents=True)
    venv_python(final).write_text("")
    fake = FakeInstaller()
    built = build(fake, root)
    assert not built.reused
    assert (final / runner.MARKER).is_file()


def test_old_build_folders_of_killed_runs_are_removed(tmp_path):
    root = tmp_path / "venvs"
    root.mkdir()
    old = root / ".build-oldest-0123456789ab-deadbeef"
    recent = root / ".build-oldest-0123456789ab-cafef00d"
    other = root / ".build-newest-0123456789ab-deadbeef"
    for path in (old, recent, other):
        path.mkdir()
    long_ago = time.time() - runner.STALE_BUILD_SECONDS - 60
    os.utime(old, (long_ago, long_ago))
    os.utime(other, (long_ago, long_ago))
    build(FakeInstaller(), root)
    assert not old.exists()
    assert recent.exists()  # may be a concurrent run's
    assert other.exists()  # another set's: left to that set's next build


def test_failed_install_leaves_nothing_behind(tmp_path):
    root = tmp_path / "venvs"
    with pytest.raises(InfrastructureError, match=r"install \(uv\) failed \(exit 1\)"):
        build(FakeInstaller(install_rc=1), root)
    assert list(root.iterdir()) == []


def test_installed_versions_must_match_the_pins(tmp_path):
    wrong = {**PINS, "torch": "2.14.0"}
    with pytest.raises(InfrastructureError, match=r"torch: pinned 2\.13\.0, installed 2\.14\.0"):
        build(FakeInstaller(installed=wrong), tmp_path / "venvs")


# --- JUnit, verdicts, table ---------------------------------------------------------------

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


def test_parse_junit_counts_each_case_once(tmp_path):
    path = tmp_path / "j.xml"
    path.write_text(JUNIT)
    counts = parse_junit(path)
    assert (counts.passed, counts.failed, counts.skipped, counts.errors) == (2, 2, 2, 1)
    assert counts.problems[0] == (
        "FAILED canary.runtime.test_a::test_bad: AssertionError: 1.0 != 2.0"
    )
    assert counts.problems[1].startswith("ERROR canary.runtime.test_b::test_fixture")


def test_parse_junit_bare_testsuite_and_garbage(tmp_path):
    path = tmp_path / "j.xml"
    path.write_text('<testsuite><testcase classname="c" name="t"/></testsuite>')
    assert parse_junit(path).passed == 1
    path.write_text("<testsuite>")
    with pytest.raises(InfrastructureError, match="no readable JUnit XML"):
        parse_junit(path)
    with pytest.raises(InfrastructureError):
        parse_junit(tmp_path / "missing.xml")


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


# --- one set end to end, and main ---------------------------------------------------------


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
    monkeypatch.setattr(runner, "find_uv", lambda: "/bin/uv")
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
