"""``python -m canary runtime``: run the runtime tier once per pin set, each in its own venv.

For every selected ``[runtime.<name>]`` pin set of tags.toml the runner

1. builds (or reuses) a virtual environment under ``<cache>/runtime-venvs/<name>-<hash>``,
   where the hash covers the pins, the interpreter and canary's own ``[project]`` table.
   A build happens in a temporary sibling folder that is renamed into place only once it
   is complete, so an interrupted build is never mistaken for a usable one;
2. installs the pins plus this checkout of canary (editable) in one resolver run, with uv
   when it is available and ``python -m venv`` + pip otherwise;
3. runs ``python -m pytest canary/runtime`` inside it with the hub offline, and
4. reads the JUnit XML into one table row.

uv ignores pip's configuration, so the user's pip settings (``pip config list``, which
includes ``PIP_*`` variables) are translated into uv options: the user's pip setup stays the
one source of truth for where packages come from.

Every subprocess goes through a :data:`RunFn`, so the orchestration is testable without
building anything.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.specifiers import SpecifierSet

from canary.cache import default_cache_dir
from canary.errors import ConfigError, InfrastructureError
from canary.runtime.pins import REQUIRED, PinSet, load_pin_sets, select

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

# Bump when the layout or the contents of a built venv change, so old ones are rebuilt.
VENV_FORMAT = 1
MARKER = "canary-venv.json"
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
# Shown as table columns, in this order; other pins appear in --list only.
COLUMNS = tuple(REQUIRED)
TEST_PATH = "canary/runtime"
# A build folder untouched this long is from a killed run, not a concurrent one.
STALE_BUILD_SECONDS = 6 * 3600
_TAIL_LINES = 25


# --- the subprocess layer -------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    cwd: Path | None = None
    env: Mapping[str, str] | None = None
    timeout: float | None = None


@dataclass(frozen=True)
class Completed:
    returncode: int
    output: str  # stdout and stderr together, in order


RunFn = Callable[[Command], Completed]


def run_command(command: Command) -> Completed:
    """Run ``command`` with stdout and stderr captured together; a timeout is exit 124."""
    try:
        proc = subprocess.run(
            command.argv,
            cwd=command.cwd,
            env=dict(command.env) if command.env is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=command.timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        output = exc.stdout if isinstance(exc.stdout, str) else ""
        return Completed(124, f"{output}\ntimed out after {command.timeout:g} s")
    except OSError as exc:
        return Completed(127, f"cannot run {command.argv[0]}: {exc}")
    return Completed(proc.returncode, proc.stdout)


# --- pip configuration -> uv options ------------------------------------------------------

_TRUE = frozenset({"1", "true", "yes", "on"})
# pip applies [global], then [install], then PIP_* variables (shown as ":env:").
_SECTION_ORDER = ("global", "install", ":env:")
_LINE = re.compile(r"^(?P<section>[^.\s]+)\.(?P<key>[A-Za-z0-9_-]+)=(?P<value>.*)$")


@dataclass(frozen=True)
class IndexSettings:
    """How uv must be told to reach the same packages pip would."""

    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


def parse_pip_config(text: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The effective install settings from ``pip config list`` output plus ``PIP_*`` variables.

    Keys come back with dashes (``extra-index-url``); later sources win, as in pip.
    """
    by_section: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        raw = match["value"]
        try:
            value = ast.literal_eval(raw)  # pip prints repr() of the value
        except (ValueError, SyntaxError):
            value = raw
        key = match["key"].replace("_", "-").lower()
        by_section.setdefault(match["section"], {})[key] = str(value)
    settings: dict[str, str] = {}
    for section in _SECTION_ORDER:
        settings.update(by_section.get(section, {}))
    # pip config list may be unavailable or old; the variables themselves are authoritative.
    for name, value in (environ or {}).items():
        if name.startswith("PIP_") and value:
            settings[name[4:].lower().replace("_", "-")] = value
    return settings


def uv_index_settings(pip: Mapping[str, str], environ: Mapping[str, str]) -> IndexSettings:
    """Translate pip settings into uv arguments and environment."""
    args: list[str] = []
    env: dict[str, str] = {}
    if pip.get("no-index", "").lower() in _TRUE:
        args.append("--no-index")
    if index := pip.get("index-url"):
        args += ["--index-url", index]
    extras = _split(pip.get("extra-index-url", ""))
    for url in extras:
        args += ["--extra-index-url", url]
    if extras:
        # pip picks the best version across all indexes; uv by default stops at the first
        # index that knows a name, which breaks as soon as an extra index lists one version.
        args += ["--index-strategy", "unsafe-best-match"]
    for location in _split(pip.get("find-links", "")):
        args += ["--find-links", location]
    for constraint in _split(pip.get("constraint", "")):
        args += ["--constraint", constraint]
    for host in _split(pip.get("trusted-host", "")):
        args += ["--allow-insecure-host", host]
    if (cert := pip.get("cert")) and "SSL_CERT_FILE" not in environ:
        env["SSL_CERT_FILE"] = cert
    if (proxy := pip.get("proxy")) and not any(
        name in environ for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
    ):
        env["HTTPS_PROXY"] = env["HTTP_PROXY"] = proxy
    timeout = pip.get("timeout") or pip.get("default-timeout")
    if timeout and "UV_HTTP_TIMEOUT" not in environ:
        env["UV_HTTP_TIMEOUT"] = timeout
    return IndexSettings(args=tuple(args), env=env)


def _split(value: str) -> list[str]:
    # pip splits list options on whitespace (newlines in config files, spaces in variables).
    return value.split()


def read_pip_config(run: RunFn, python: str, environ: Mapping[str, str]) -> dict[str, str]:
    result = run(Command((python, "-m", "pip", "config", "list"), env=environ, timeout=60))
    text = result.output if result.returncode == 0 else ""
    return parse_pip_config(text, environ)


# --- installers --------------------------------------------------------------------------


@dataclass(frozen=True)
class Installer:
    """uv (``uv`` is the binary) or pip in the new venv (``uv`` is None)."""

    uv: str | None
    index: IndexSettings = IndexSettings()

    @property
    def name(self) -> str:
        return "uv" if self.uv else "pip"

    def create(self, venv: Path, base_python: str) -> Command:
        if self.uv:
            # Relocatable: the venv is built in a temporary folder and renamed into place.
            argv = (self.uv, "venv", "--quiet", "--relocatable", "--python", base_python, str(venv))
            return Command(argv, timeout=300)
        # pip venvs are not relocatable (scripts keep absolute shebangs), but the runner
        # only ever calls bin/python, which finds its pyvenv.cfg wherever it lives.
        return Command((base_python, "-m", "venv", str(venv)), timeout=300)

    def install(self, venv: Path, requirements: Sequence[str], repo: Path) -> Command:
        python = str(venv_python(venv))
        if self.uv:
            argv = (
                self.uv, "pip", "install", "--python", python,
                # Without it the first import of torch/transformers compiles for minutes.
                "--compile-bytecode",
                *self.index.args, *requirements, "-e", str(repo),
            )  # fmt: skip
        else:
            argv = (
                python, "-m", "pip", "install", "--disable-pip-version-check",
                *requirements, "-e", str(repo),
            )  # fmt: skip
        return Command(argv, timeout=3600)


def find_uv() -> str | None:
    """The uv binary: from the ``uv`` Python package (the runtime extra), else on PATH."""
    try:
        from uv import find_uv_bin
    except ImportError:
        return shutil.which("uv")
    try:
        return find_uv_bin()
    except FileNotFoundError:
        return shutil.which("uv")


def choose_installer(
    kind: str, run: RunFn, environ: Mapping[str, str], uv: str | None = None
) -> Installer:
    """``auto`` takes uv when present; ``uv`` insists on it; ``pip`` never uses it."""
    if kind == "pip":
        return Installer(uv=None)
    uv = uv or find_uv()
    if uv is None:
        if kind == "uv":
            raise ConfigError("--installer uv: uv is not installed (pip install 'canary[runtime]')")
        return Installer(uv=None)
    pip = read_pip_config(run, sys.executable, environ)
    return Installer(uv=uv, index=uv_index_settings(pip, environ))


# --- venv identity and building ----------------------------------------------------------


@dataclass(frozen=True)
class Python:
    """The interpreter venvs are built from; part of their identity."""

    executable: str
    version: str  # sys.version: includes the build, so a rebuilt interpreter is a new venv

    @classmethod
    def current(cls) -> Python:
        return cls(executable=sys.executable, version=sys.version)

    @property
    def short_version(self) -> str:
        return self.version.split()[0]


def venv_python(venv: Path) -> Path:
    if os.name == "nt":  # pragma: no cover - no Windows runner here
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def venv_digest(pin_set: PinSet, python: Python, project: Mapping[str, object]) -> str:
    """What makes two venvs interchangeable: the pins, the interpreter, canary's metadata."""
    identity = {
        "format": VENV_FORMAT,
        "pins": dict(pin_set.pins),
        "python": [python.executable, python.version],
        # canary is installed editable, so its code is live; its dependencies and entry
        # points are fixed at install time and come from here.
        "project": project,
    }
    blob = json.dumps(identity, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def venv_dir(root: Path, pin_set: PinSet, digest: str) -> Path:
    return root / f"{pin_set.name}-{digest}"


def read_project_table(repo: Path) -> dict[str, object]:
    try:
        data = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{repo / 'pyproject.toml'}: cannot read it: {exc}") from None
    return dict(data.get("project", {}))


@dataclass(frozen=True)
class Built:
    path: Path
    reused: bool
    seconds: float
    installed: Mapping[str, str | None]


_PROBE = (
    "import json, sys\n"
    "from importlib.metadata import PackageNotFoundError, version\n"
    "found = {}\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        found[name] = version(name)\n"
    "    except PackageNotFoundError:\n"
    "        found[name] = None\n"
    "print(json.dumps(found))\n"
)


def ensure_venv(
    pin_set: PinSet,
    *,
    root: Path,
    digest: str,
    repo: Path,
    python: Python,
    installer: Installer,
    run: RunFn,
    environ: Mapping[str, str],
    rebuild: bool = False,
    clock: Callable[[], float] = time.monotonic,
) -> Built:
    """Reuse the complete venv for this digest, or build it; raises InfrastructureError."""
    final = venv_dir(root, pin_set, digest)
    start = clock()
    if not rebuild and (marker := _read_marker(final)) is not None:
        return Built(final, reused=True, seconds=clock() - start, installed=marker["installed"])
    root.mkdir(parents=True, exist_ok=True)
    building = root / f".build-{final.name}-{uuid.uuid4().hex[:8]}"
    env = {**environ, **installer.index.env}
    try:
        _step(run, _with(installer.create(building, python.executable), env, root), "create venv")
        install = installer.install(building, pin_set.requirements(), repo)
        _step(run, _with(install, env, root), f"install ({installer.name})")
        installed = _probe(run, building, pin_set, env)
        marker_data = {
            "name": pin_set.name,
            "pins": dict(pin_set.pins),
            "installed": installed,
            "python": python.version,
            "installer": installer.name,
        }
        # Written last: only a venv that has its marker counts as complete.
        (building / MARKER).write_text(json.dumps(marker_data, indent=2), encoding="utf-8")
        _move_into_place(building, final, replace=rebuild)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    _drop_other_digests(root, pin_set.name, keep=final)
    return Built(final, reused=False, seconds=clock() - start, installed=installed)


def _with(command: Command, env: Mapping[str, str], cwd: Path) -> Command:
    # cwd outside the checkout: uv must not pick up a project or its settings from there.
    return Command(command.argv, cwd=cwd, env=env, timeout=command.timeout)


def _step(run: RunFn, command: Command, what: str) -> Completed:
    result = run(command)
    if result.returncode != 0:
        raise InfrastructureError(
            f"{what} failed (exit {result.returncode}): {shlex.join(command.argv)}\n"
            + tail(result.output)
        )
    return result


def _probe(
    run: RunFn, venv: Path, pin_set: PinSet, env: Mapping[str, str]
) -> dict[str, str | None]:
    names = list(pin_set.pins)
    command = Command((str(venv_python(venv)), "-c", _PROBE, *names), env=env, timeout=120)
    result = _step(run, command, "read installed versions")
    try:
        installed = json.loads(result.output.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise InfrastructureError(
            f"cannot read installed versions:\n{tail(result.output)}"
        ) from None
    # A resolver that silently picked something else would make the set mean nothing.
    wrong = [
        f"{name}: pinned {pin}, installed {installed.get(name)}"
        for name, pin in pin_set.pins.items()
        if installed.get(name) is None or not SpecifierSet(f"=={pin}").contains(installed[name])
    ]
    if wrong:
        raise InfrastructureError("installed versions differ from the pins: " + "; ".join(wrong))
    return installed


def _read_marker(venv: Path) -> dict | None:
    try:
        data = json.loads((venv / MARKER).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not venv_python(venv).exists() or not isinstance(data.get("installed"), dict):
        return None
    return data


def _move_into_place(building: Path, final: Path, *, replace: bool) -> None:
    if final.exists():
        if not replace and _read_marker(final) is not None:
            # A concurrent runner finished the same venv first and may be using it: keep it.
            return
        # --rebuild, or a folder without marker (never one of ours: ours appear complete).
        retired = final.with_name(f".retired-{final.name}-{uuid.uuid4().hex[:8]}")
        os.replace(final, retired)
        shutil.rmtree(retired, ignore_errors=True)
    os.replace(building, final)


def _drop_other_digests(root: Path, name: str, keep: Path) -> None:
    """Free the disk: venvs of earlier pins of this set are never reused again, and build
    folders of killed runs are never finished. Recent ones may belong to a concurrent run."""
    digest = re.compile(rf"^{re.escape(name)}-[0-9a-f]{{12}}$")
    leftover = re.compile(rf"^\.(build|retired)-{re.escape(name)}-[0-9a-f]{{12}}-[0-9a-f]{{8}}$")
    for path in root.iterdir():
        if path == keep or not path.is_dir():
            continue
        if digest.match(path.name) or (
            leftover.match(path.name) and time.time() - path.stat().st_mtime > STALE_BUILD_SECONDS
        ):
            shutil.rmtree(path, ignore_errors=True)


# --- running the tier and reading its results ---------------------------------------------


@dataclass(frozen=True)
class Counts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    errors: int = 0
    problems: tuple[str, ...] = ()  # "FAILED id: message" lines for the details section

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped + self.errors


def parse_junit(path: Path) -> Counts:
    """Count test cases by outcome; pytest writes xfail as skipped and xpass as passed."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise InfrastructureError(f"{path}: no readable JUnit XML: {exc}") from None
    passed = failed = skipped = errors = 0
    problems = []
    for case in root.iter("testcase"):
        case_id = "::".join(filter(None, (case.get("classname"), case.get("name"))))
        # A case that failed and then errored in teardown counts once, as failed.
        failure = case.find("failure")
        error = case.find("error")
        if failure is not None:
            failed += 1
            problems.append(f"FAILED {case_id}: {_first_line(failure)}")
        elif error is not None:
            errors += 1
            problems.append(f"ERROR {case_id}: {_first_line(error)}")
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return Counts(passed, failed, skipped, errors, tuple(problems))


def _first_line(element: ET.Element) -> str:
    text = element.get("message") or element.text or ""
    return text.strip().splitlines()[0] if text.strip() else "(no message)"


def tier_environment(environ: Mapping[str, str], venv: Path) -> dict[str, str]:
    env = {k: v for k, v in environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = os.pathsep.join([str(venv_python(venv).parent), environ.get("PATH", "")])
    env.update(OFFLINE_ENV)
    return env


def tier_command(
    venv: Path,
    repo: Path,
    junit: Path,
    *,
    pytest_args: Sequence[str],
    env: Mapping[str, str],
    timeout: float | None = None,
) -> Command:
    argv = (
        str(venv_python(venv)), "-m", "pytest", TEST_PATH,
        "-p", "no:cacheprovider", f"--junitxml={junit}", *pytest_args,
    )  # fmt: skip
    return Command(argv, cwd=repo, env=env, timeout=timeout)


# --- one pin set, end to end --------------------------------------------------------------

OK, FAILED, ERROR, INSTALL_ERROR, SKIPPED = "ok", "FAILED", "ERROR", "INSTALL ERROR", "skipped"


@dataclass(frozen=True)
class SetResult:
    pin_set: PinSet
    status: str
    installed: Mapping[str, str | None] = field(default_factory=dict)
    counts: Counts | None = None
    install_seconds: float | None = None
    reused: bool = False
    test_seconds: float | None = None
    detail: str = ""

    @property
    def is_bad(self) -> bool:
        return self.status not in (OK, SKIPPED)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Context:
    root: Path  # <cache>/runtime-venvs
    reports: Path  # JUnit XML and pytest output per set
    repo: Path
    python: Python
    installer: Installer
    project: Mapping[str, object]
    run: RunFn = run_command
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    rebuild: bool = False
    pytest_args: tuple[str, ...] = ()
    timeout: float | None = None
    clock: Callable[[], float] = time.monotonic
    log: Callable[[str], None] = _stderr


def run_set(pin_set: PinSet, ctx: Context) -> SetResult:
    if reason := pin_set.python_mismatch(ctx.python.short_version):
        return SetResult(pin_set, SKIPPED, detail=reason)
    digest = venv_digest(pin_set, ctx.python, ctx.project)
    ctx.log(f"canary runtime: [{pin_set.name}] environment ({ctx.installer.name})")
    try:
        built = ensure_venv(
            pin_set,
            root=ctx.root,
            digest=digest,
            repo=ctx.repo,
            python=ctx.python,
            installer=ctx.installer,
            run=ctx.run,
            environ=ctx.environ,
            rebuild=ctx.rebuild,
            clock=ctx.clock,
        )
    except InfrastructureError as exc:
        return SetResult(pin_set, INSTALL_ERROR, detail=str(exc))
    ctx.log(f"canary runtime: [{pin_set.name}] pytest {TEST_PATH} in {built.path}")
    ctx.reports.mkdir(parents=True, exist_ok=True)
    junit = ctx.reports / f"{pin_set.name}.xml"
    junit.unlink(missing_ok=True)  # a stale report must never be read as this run's
    env = tier_environment(ctx.environ, built.path)
    command = tier_command(
        built.path, ctx.repo, junit, pytest_args=ctx.pytest_args, env=env, timeout=ctx.timeout
    )
    start = ctx.clock()
    result = ctx.run(command)
    test_seconds = ctx.clock() - start
    log_path = ctx.reports / f"{pin_set.name}.log"
    log_path.write_text(result.output, encoding="utf-8")
    base = {
        "installed": built.installed,
        "install_seconds": built.seconds,
        "reused": built.reused,
        "test_seconds": test_seconds,
    }
    try:
        counts = parse_junit(junit)
    except InfrastructureError:
        detail = f"pytest exited {result.returncode} without a report (log: {log_path})\n"
        return SetResult(pin_set, ERROR, detail=detail + tail(result.output), **base)
    status, detail = judge(result.returncode, counts)
    if status != OK:
        detail = f"{detail} (log: {log_path})"
    return SetResult(pin_set, status, counts=counts, detail=detail, **base)


def judge(returncode: int, counts: Counts) -> tuple[str, str]:
    """The verdict for one set from pytest's exit status and the counted cases."""
    if counts.failed or counts.errors:
        return FAILED, "\n".join(counts.problems)
    if returncode == 5 or counts.total == 0:
        return ERROR, "no tests collected"
    if returncode != 0:
        # Exit 1 with no failed case, 2 interrupted, 3 internal error, 4 usage error.
        return ERROR, f"pytest exited {returncode} although no case failed"
    return OK, ""


def tail(text: str, lines: int = _TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


# --- the table -------------------------------------------------------------------------


def render_table(results: Iterable[SetResult]) -> str:
    """One Markdown table: it reads in a terminal and pastes into a PR comment."""
    header = ["pin set", *COLUMNS, "passed", "failed", "skipped", "errors",
              "install s", "test s", "result"]  # fmt: skip
    rows = [header]
    for result in results:
        versions = [
            str(result.installed.get(name) or result.pin_set.pins.get(name, "-"))
            for name in COLUMNS
        ]
        counts = result.counts
        numbers = (
            [str(counts.passed), str(counts.failed), str(counts.skipped), str(counts.errors)]
            if counts
            else ["-"] * 4
        )
        install = "-" if result.install_seconds is None else f"{result.install_seconds:.1f}"
        if result.reused:
            install += " (reused)"
        test = "-" if result.test_seconds is None else f"{result.test_seconds:.1f}"
        rows.append([result.pin_set.name, *versions, *numbers, install, test, result.status])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def render_details(results: Iterable[SetResult]) -> str:
    blocks = [
        f"[{r.pin_set.name}] {r.status}: {r.detail}" for r in results if r.detail and r.status
    ]
    return "\n\n".join(blocks)


def exit_status(results: Sequence[SetResult]) -> int:
    """0 when every set that ran is green and at least one ran; 1 otherwise."""
    if not results or any(r.is_bad for r in results):
        return 1
    return 0 if any(r.status == OK for r in results) else 1


# --- command line ------------------------------------------------------------------------


def repo_root() -> Path:
    """The source checkout this canary runs from: the runtime tier's tests live there."""
    import canary

    root = Path(canary.__file__).resolve().parent.parent
    if not (root / "pyproject.toml").is_file() or not (root / TEST_PATH).is_dir():
        raise ConfigError(
            f"{root}: not a canary source checkout; the runtime runner needs one "
            "(git clone, then pip install -e .)"
        )
    return root


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m canary runtime",
        description="Run the runtime tier once per [runtime] pin set of tags.toml, each in "
        "its own virtual environment, and print one table. Arguments after -- go to pytest.",
    )
    parser.add_argument("--pins", default="all", help="NAME[,NAME...] or all (default: all)")
    parser.add_argument("--list", action="store_true", help="show the pin sets and exit")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the venvs even if reusable")
    parser.add_argument("--tags", type=Path, help="tags.toml to read (default: the checkout's)")
    parser.add_argument(
        "--installer", choices=("auto", "uv", "pip"), default="auto", help="default: auto (uv)"
    )
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments, one string")
    parser.add_argument("--timeout", type=float, help="seconds the tests of one set may take")
    parser.add_argument(
        "--report-dir", type=Path, help="JUnit XML and logs (default: <cache>/runtime-reports)"
    )
    return parser


def main(argv: Sequence[str] | None = None, *, run: RunFn = run_command) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1 :]
    args = build_parser().parse_args(argv)
    try:
        return _main(args, passthrough, run)
    except ConfigError as exc:
        print(f"canary: error: {exc}", file=sys.stderr)
        return 2


def _main(args: argparse.Namespace, passthrough: list[str], run: RunFn) -> int:
    repo = repo_root()
    sets = load_pin_sets(args.tags or repo / "tags.toml")
    cache = default_cache_dir()
    root = cache / "runtime-venvs"
    python = Python.current()
    project = read_project_table(repo)
    if args.list:
        print(render_list(sets.values(), root, python, project))
        return 0
    chosen = select(sets, args.pins)
    environ = dict(os.environ)
    ctx = Context(
        root=root,
        reports=args.report_dir or cache / "runtime-reports",
        repo=repo,
        python=python,
        installer=choose_installer(args.installer, run, environ),
        project=project,
        run=run,
        environ=environ,
        rebuild=args.rebuild,
        pytest_args=(*shlex.split(args.pytest_args), *passthrough),
        timeout=args.timeout,
    )
    results = [run_set(pin_set, ctx) for pin_set in chosen]
    print(render_table(results))
    if details := render_details(results):
        print()
        print(details)
    return exit_status(results)


def render_list(
    sets: Iterable[PinSet], root: Path, python: Python, project: Mapping[str, object]
) -> str:
    blocks = []
    for pin_set in sets:
        venv = venv_dir(root, pin_set, venv_digest(pin_set, python, project))
        state = f"built: {venv}" if _read_marker(venv) else "not built"
        pins = ", ".join(f"{name}=={version}" for name, version in pin_set.pins.items())
        extra = f"\n  requires-python {pin_set.requires_python}" if pin_set.requires_python else ""
        blocks.append(f"{pin_set.name}: {pin_set.summary}\n  {pins}{extra}\n  {state}")
    return "\n".join(blocks)
