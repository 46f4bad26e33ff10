"""``python -m canary runtime``: run the runtime tier once per pin set, each in its own venv.

For every selected ``[runtime.<name>]`` pin set of tags.toml the runner

1. builds (or reuses) the set's virtual environment (:mod:`canary.runtime.venv`), with
   uv when it is available and ``python -m venv`` + pip otherwise
   (:mod:`canary.runtime.installer`, told the user's pip configuration by
   :mod:`canary.runtime.pipconfig`);
2. runs ``python -m pytest canary/runtime`` inside it with the hub offline
   (:mod:`canary.runtime.tier`), and
3. reads the JUnit XML (:mod:`canary.runtime.junit`) into one row of one table.

Every subprocess goes through a :data:`~canary.runtime.process.RunFn`, so the
orchestration is testable without building anything.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from canary.cache import default_cache_dir
from canary.errors import ConfigError, InfrastructureError
from canary.runtime.installer import Installer, choose_installer
from canary.runtime.junit import Counts, parse_junit
from canary.runtime.pins import REQUIRED, PinSet, load_pin_sets, select
from canary.runtime.process import RunFn, run_command, tail
from canary.runtime.tier import TEST_PATH, tier_command, tier_environment
from canary.runtime.venv import (
    Python,
    ensure_venv,
    is_complete,
    read_project_table,
    venv_digest,
    venv_dir,
)

# Shown as table columns, in this order; other pins appear in --list only.
COLUMNS = tuple(REQUIRED)


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
    """Build or reuse the set's venv, run the tier in it and judge the outcome. An install
    or pytest problem becomes the result's status, so the other sets still run."""
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
    """What went wrong per set, below the table: the table's cells cannot hold it."""
    blocks = [
        f"[{r.pin_set.name}] {r.status}: {r.detail}" for r in results if r.detail and r.status
    ]
    return "\n\n".join(blocks)


def exit_status(results: Sequence[SetResult]) -> int:
    """0 when every set that ran is green and at least one ran; 1 otherwise."""
    if not results or any(r.is_bad for r in results):
        return 1
    return 0 if any(r.status == OK for r in results) else 1


def render_list(
    sets: Iterable[PinSet], root: Path, python: Python, project: Mapping[str, object]
) -> str:
    """``--list``: each set's pins and whether its venv for this interpreter is built."""
    blocks = []
    for pin_set in sets:
        venv = venv_dir(root, pin_set, venv_digest(pin_set, python, project))
        state = f"built: {venv}" if is_complete(venv) else "not built"
        pins = ", ".join(f"{name}=={version}" for name, version in pin_set.pins.items())
        extra = f"\n  requires-python {pin_set.requires_python}" if pin_set.requires_python else ""
        blocks.append(f"{pin_set.name}: {pin_set.summary}\n  {pins}{extra}\n  {state}")
    return "\n".join(blocks)


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
    parser.add_argument(
        "--tags-file", "--tags", type=Path, help="tags.toml to read (default: the checkout's)"
    )
    parser.add_argument(
        "--installer", choices=("auto", "uv", "pip"), default="auto", help="default: auto (uv)"
    )
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments, one string")
    parser.add_argument("--timeout", type=float, help="seconds the tests of one set may take")
    parser.add_argument(
        "--report-dir", type=Path, help="JUnit XML and logs (default: <cache>/runtime-reports)"
    )
    sweep = parser.add_argument_group("behaviour sweep (docs/sweep.md)")
    sweep.add_argument(
        "--sweep", nargs="*", metavar="PKG",
        help="run the behaviour subset on every release of PKG in tags.toml "
        "(default: transformers trl peft); with --list, show each release's environment",
    )  # fmt: skip
    sweep.add_argument(
        "--local", action="append", default=[], metavar="PKG[@VERSION]=PATH",
        help="run the behaviour subset on the tree at PATH as PKG (repeatable)",
    )  # fmt: skip
    sweep.add_argument("--only", default="", metavar="V1,V2", help="--sweep: only these releases")
    sweep.add_argument(
        "--base", default="", metavar="NAME[,NAME]", help="--sweep: only releases on these bases"
    )
    sweep.add_argument(
        "--spread", action="store_true",
        help="--sweep: only the first and last release each base pin set serves",
    )  # fmt: skip
    sweep.add_argument(
        "--shard", default="1/1", metavar="K/N",
        help="--sweep: every N-th release from the K-th, after the other filters",
    )  # fmt: skip
    sweep.add_argument(
        "--drop-overlays", action="store_true",
        help="--sweep: delete each release's overlay after its run (disk: the base venvs only)",
    )  # fmt: skip
    sweep.add_argument("--json", type=Path, metavar="FILE", help="write the sweep's results")
    sweep.add_argument(
        "--offline", action="store_true", help="read release metadata from the cache only"
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
    if args.sweep is not None or args.local:
        from canary.runtime.sweepcli import sweep_main

        return sweep_main(args, passthrough, run, repo_root())
    repo = repo_root()
    sets = load_pin_sets(args.tags_file or repo / "tags.toml")
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
