"""``python -m canary runtime --sweep [PKG ...]``: the behaviour subset on every release.

Per release of each swept package in tags.toml (or per ``--local PKG=PATH`` tree) the
environment rule (:mod:`canary.runtime.sweepenv`) names a base pin set; its venv is built
once (:mod:`canary.runtime.venv`) and the release goes into an overlay on it
(:mod:`canary.runtime.overlay`). ``pytest -m behaviour canary/runtime`` runs there, and
each case becomes a ``runtime[<package>_<version>]`` case of the results JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path

from canary.errors import ConfigError, InfrastructureError
from canary.report.results import CaseResult, RunResults
from canary.runtime.installer import Installer
from canary.runtime.overlay import Overlay, ensure_overlay, folder_bytes
from canary.runtime.pins import PinSet
from canary.runtime.process import RunFn, tail
from canary.runtime.sweepenv import Environment, Metadata, environment_for
from canary.runtime.tier import tier_command, tier_environment
from canary.runtime.venv import Built, Python, ensure_venv, venv_digest

DEFAULT_PACKAGES = ("transformers", "trl", "peft")
MARKER_EXPR = "behaviour"
# Which fix each behaviour module exercises: the row's "fix" in the report.
FIXES = {
    "test_grad_accum": "grad-accum clamp + accepts_loss_kwargs (training step)",
    "test_accepts_loss_kwargs": "accepts_loss_kwargs shadowing (training step)",
    "test_chunked_loss": "chunked NLL (forward/backward)",
    "test_trl_sft": "chunked NLL under TRL SFT (training step)",
}


@dataclass(frozen=True)
class Target:
    """One thing to sweep: a release from the index, or a tree on disk (``local``)."""

    env: Environment
    local: Path | None = None


class Status(str, Enum):
    """One release's verdict; only OK is green."""

    OK = "ok"
    FAILED = "FAILED"  # a behaviour case failed or errored: the fixes are wrong there
    ERROR = "ERROR"  # pytest gave no usable report
    INSTALL_ERROR = "INSTALL ERROR"  # the base venv or the overlay could not be built
    NO_ENVIRONMENT = "NO ENVIRONMENT"  # the environment rule found no companions


@dataclass
class ReleaseResult:
    target: Target
    status: Status
    cases: list[CaseResult] = field(default_factory=list)
    build_seconds: float = 0.0
    test_seconds: float = 0.0
    overlay_bytes: int = 0
    base_built: bool = False
    detail: str = ""


def plan(
    packages: Sequence[str],
    versions: Mapping[str, Sequence[str]],
    sets: Sequence[PinSet],
    metadata: Metadata,
    only: frozenset[str] = frozenset(),
) -> list[Target]:
    """Every release of each package (those in ``only`` where given), with its environment,
    in tags.toml's order; positions count in the whole list either way."""
    found = []
    for package in packages:
        if package not in versions:
            known = ", ".join(versions)
            raise ConfigError(f"--sweep {package}: not a package of tags.toml (known: {known})")
        for release in versions[package]:
            if only and release not in only:
                continue
            env = environment_for(package, release, sets, metadata, versions[package])
            found.append(Target(env))
    return found


def spread(targets: Sequence[Target]) -> list[Target]:
    """The first and last release each base pin set serves, per package: the pin sets mark
    the windows the fixes care about, so this is a window's two ends."""
    groups: dict[tuple[str, str], list[Target]] = {}
    for target in targets:
        groups.setdefault((target.env.package, target.env.base.name), []).append(target)
    keep = {id(t) for group in groups.values() for t in (group[0], group[-1])}
    return [t for t in targets if id(t) in keep]


def shard(targets: Sequence[Target], spec: str) -> list[Target]:
    """``K/N``: the K-th of N interleaved slices (1-based), so each slice gets early and
    late releases alike."""
    k, sep, n = spec.partition("/")
    if not (sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise ConfigError(f"--shard {spec!r}: write K/N with 1 <= K <= N, e.g. 2/3")
    return list(targets[int(k) - 1 :: int(n)])


def local_target(
    spec: str,
    versions: Mapping[str, Sequence[str]],
    sets: Sequence[PinSet],
    metadata: Metadata,
    read_version: Callable[[str, Path], str],
) -> Target:
    """``PKG=PATH`` or ``PKG@VERSION=PATH``: the tree's environment is its version's."""
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise ConfigError(f"--local {spec!r}: write PKG=PATH or PKG@VERSION=PATH")
    package, _, stated = name.partition("@")
    if package not in versions:
        raise ConfigError(f"--local {spec!r}: {package} is not a package of tags.toml")
    tree = Path(path).expanduser().resolve()
    importable = tree / "src" if (tree / "src" / package).is_dir() else tree
    if not (importable / package / "__init__.py").is_file():
        raise ConfigError(f"--local {spec!r}: no {package}/__init__.py under {tree} or its src/")
    version = stated or read_version(package, tree)
    env = environment_for(package, version, sets, metadata, versions[package])
    return Target(env, local=importable)


def render_plan(targets: Sequence[Target]) -> str:
    return "\n".join(t.env.line() + (f" [local: {t.local}]" if t.local else "") for t in targets)


@dataclass(frozen=True)
class SweepContext:
    root: Path  # <cache>/runtime-venvs
    reports: Path
    repo: Path
    python: Python
    installer: Installer
    project: Mapping[str, object]
    run: RunFn
    environ: Mapping[str, str]
    pytest_args: tuple[str, ...] = ()
    timeout: float | None = None
    keep_overlays: bool = True
    clock: Callable[[], float] = time.monotonic
    log: Callable[[str], None] = lambda message: print(message, file=sys.stderr, flush=True)


def sweep(targets: Sequence[Target], ctx: SweepContext) -> list[ReleaseResult]:
    """Run the behaviour subset per target, one environment at a time."""
    bases: dict[str, Built] = {}
    results = []
    for target in targets:
        results.append(_one(target, ctx, bases))
    return results


def _one(target: Target, ctx: SweepContext, bases: dict[str, Built]) -> ReleaseResult:
    env = target.env
    if env.problem:
        return ReleaseResult(target, Status.NO_ENVIRONMENT, detail=env.problem)
    start = ctx.clock()
    base_built = env.base.name not in bases
    try:
        base, overlay = _environment(target, ctx, bases)
    except InfrastructureError as exc:
        return ReleaseResult(target, Status.INSTALL_ERROR, build_seconds=ctx.clock() - start,
                             base_built=base_built, detail=str(exc))  # fmt: skip
    base_built = base_built and not base.reused
    outcome = ReleaseResult(
        target, Status.OK, build_seconds=ctx.clock() - start,
        overlay_bytes=overlay.bytes if overlay else 0, base_built=base_built,
    )  # fmt: skip
    paths = [str(target.local)] if target.local else []
    if overlay is not None:
        paths.append(str(overlay.path))
    try:
        _run_subset(outcome, base, paths, ctx)
    finally:
        if overlay is not None and not ctx.keep_overlays:
            # Disk stays at the base venvs; the uv cache makes the next build a link away.
            shutil.rmtree(overlay.path, ignore_errors=True)
    return outcome


def _environment(
    target: Target, ctx: SweepContext, bases: dict[str, Built]
) -> tuple[Built, Overlay | None]:
    """The base venv (built once per run) and the overlay the target runs on."""
    env = target.env
    if env.base.name not in bases:
        ctx.log(f"canary sweep: base venv [{env.base.name}]")
        bases[env.base.name] = ensure_venv(
            env.base,
            root=ctx.root,
            digest=venv_digest(env.base, ctx.python, ctx.project),
            repo=ctx.repo,
            python=ctx.python,
            installer=ctx.installer,
            run=ctx.run,
            environ=ctx.environ,
        )
    base = bases[env.base.name]
    if target.local is None:
        ctx.log(f"canary sweep: {env.line()}")
        overlay = ensure_overlay(
            env, base.path, installer=ctx.installer, run=ctx.run, environ=ctx.environ
        )
        return base, overlay
    if not (env.swapped or env.left_out):
        return base, None
    # The tree is not on the index: the overlay holds the companions only, resolved beside
    # the base's own release of the package; the tree goes before it.
    pinned = env.base.pins[env.package]
    companions = replace(env, release=pinned, pins={**env.pins, env.package: pinned})
    overlay = ensure_overlay(
        companions, base.path, installer=ctx.installer, run=ctx.run, environ=ctx.environ
    )
    return base, overlay


def _run_subset(outcome: ReleaseResult, base: Built, paths: list[str], ctx: SweepContext) -> None:
    """``pytest -m behaviour`` in the base venv with ``paths`` first; fills ``outcome``."""
    target = outcome.target
    ctx.reports.mkdir(parents=True, exist_ok=True)
    stem = target.env.case_id + ("-local" if target.local else "")
    junit = ctx.reports / f"{stem}.xml"
    junit.unlink(missing_ok=True)  # a stale report must never be read as this run's
    environ = tier_environment(ctx.environ, base.path)
    environ["PYTHONPATH"] = os.pathsep.join(paths)
    command = tier_command(base.path, ctx.repo, junit, env=environ, timeout=ctx.timeout,
                           pytest_args=("-m", MARKER_EXPR, *ctx.pytest_args))  # fmt: skip
    started = ctx.clock()
    result = ctx.run(command)
    outcome.test_seconds = ctx.clock() - started
    (ctx.reports / f"{stem}.log").write_text(result.output, encoding="utf-8")
    try:
        outcome.cases = junit_cases(junit, target)
    except InfrastructureError:
        outcome.status = Status.ERROR
        outcome.detail = f"pytest exited {result.returncode} without a report\n"
        outcome.detail += tail(result.output)
        return
    bad = [c for c in outcome.cases if c.outcome in ("fail", "error")]
    if bad:
        outcome.status = Status.FAILED
        outcome.detail = "\n".join(f"{c.outcome.upper()} {c.check}: {c.message}" for c in bad)
    elif not outcome.cases or result.returncode != 0:
        outcome.status = Status.ERROR
        outcome.detail = f"pytest exited {result.returncode}\n{tail(result.output)}"


def junit_cases(path: Path, target: Target) -> list[CaseResult]:
    """Each behaviour case of one release as a ``runtime[<package>_<version>]`` case."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise InfrastructureError(f"{path}: no readable JUnit XML: {exc}") from None
    env = target.env
    cases = []
    for case in root.iter("testcase"):
        module = (case.get("classname") or "").rpartition(".")[2]
        name = case.get("name") or ""
        outcome, message = "pass", ""
        for tag, kind in (("failure", "fail"), ("error", "error"), ("skipped", "skip")):
            element = case.find(tag)
            if element is not None:
                outcome = kind
                message = (element.get("message") or element.text or "").strip()
                break
        check = f"runtime {module}::{name}"
        cases.append(
            CaseResult(
                package=env.package,
                label=env.release,
                source="local" if target.local else "index",
                check=check,
                nodeid=f"runtime[{env.case_id}]::canary/runtime/{module}.py::{name}",
                outcome=outcome,
                fix=FIXES.get(module, "runtime behaviour"),
                message=message[:2000],
                reads=(),
                window="",
                version=env.release,
                duration=float(case.get("time") or 0.0),
            )
        )
    return cases


def write_json(path: Path, results: Sequence[ReleaseResult], *, exitstatus: int) -> None:
    """The sweep as a canary-results/1 file: ``python -m canary report`` folds it with
    the static run's. A release without cases (no environment, install error) becomes one
    error case, so it is never read as green."""
    cases: list[CaseResult] = []
    local: dict[str, dict[str, str]] = {}
    for result in results:
        env = result.target.env
        cases.extend(result.cases)
        if result.target.local:
            local[env.package] = {"path": str(result.target.local), "version": env.release}
        if not result.cases:
            cases.append(
                CaseResult(
                    package=env.package,
                    label=env.release,
                    source="local" if result.target.local else "index",
                    check="runtime environment",
                    nodeid=f"runtime[{env.case_id}]::environment",
                    outcome="error",
                    fix="behaviour sweep",
                    message=result.detail[:2000],
                    reads=(),
                    window="",
                    version=env.release,
                )
            )
    run = RunResults(
        cases=cases,
        exitstatus=exitstatus,
        source="sweep",
        local=local,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        selected=len(cases),
    )
    data = run.to_json()
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)  # never a half-written file in place of the previous one


def render_results(results: Sequence[ReleaseResult]) -> str:
    header = ("release", "base", "passed", "failed", "skipped", "build s", "test s",
              "overlay MB", "result")  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in results:
        counts = {k: sum(1 for c in r.cases if c.outcome == k) for k in ("pass", "fail", "skip")}
        name = f"{r.target.env.package} {r.target.env.release}"
        name += " (local)" if r.target.local else ""
        lines.append(
            f"| {name} | {r.target.env.base.name} | {counts['pass']} | {counts['fail']} | "
            f"{counts['skip']} | {r.build_seconds:.1f}{' (base)' if r.base_built else ''} | "
            f"{r.test_seconds:.1f} | {r.overlay_bytes / 1e6:.0f} | {r.status.value} |"
        )
    details = [
        f"[{r.target.env.case_id}] {r.status.value}: {r.detail}" for r in results if r.detail
    ]
    return "\n".join(lines + (["", *details] if details else []))


def disk_use(root: Path) -> int:
    return folder_bytes(root) if root.is_dir() else 0
