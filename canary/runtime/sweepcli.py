"""The ``--sweep``/``--local`` half of ``python -m canary runtime``: plan, build, run, write."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from canary.cache import default_cache_dir
from canary.errors import ConfigError
from canary.runtime.installer import choose_installer
from canary.runtime.metadata import WheelMetadata
from canary.runtime.pins import load_pin_sets
from canary.runtime.process import RunFn
from canary.runtime.sweep import (
    DEFAULT_PACKAGES,
    Status,
    SweepContext,
    disk_use,
    local_target,
    plan,
    render_plan,
    render_results,
    shard,
    spread,
    sweep,
    write_json,
)
from canary.runtime.venv import Python, read_project_table
from canary.sources.local import detect_version
from canary.tags import load_tags


def _read_version(package: str, tree: Path) -> str:
    version = detect_version(package, tree)
    if version is None:
        raise ConfigError(
            f"--local {package}={tree}: cannot tell its version; write {package}@VERSION=PATH"
        )
    return version


def sweep_main(args: argparse.Namespace, passthrough: list[str], run: RunFn, repo: Path) -> int:
    """``args`` as :func:`canary.runtime.runner.build_parser` parsed them; ``repo`` the
    checkout whose ``canary/runtime`` tests run."""
    tags_file = args.tags_file or repo / "tags.toml"
    tags = load_tags(tags_file, option="--tags-file")
    sets = list(load_pin_sets(tags_file).values())
    versions = {name: list(p.versions) for name, p in tags.packages.items()}
    cache = default_cache_dir()
    metadata = WheelMetadata(cache / "wheels", offline=args.offline)
    only = frozenset(v.strip() for v in args.only.split(",") if v.strip())
    packages = tuple(args.sweep or ()) or (() if args.local else DEFAULT_PACKAGES)
    targets = plan(packages, versions, sets, metadata, only)
    if bases := {b.strip() for b in args.base.split(",") if b.strip()}:
        if unknown := bases - {s.name for s in sets}:
            raise ConfigError(f"--base: unknown pin set(s) {', '.join(sorted(unknown))}")
        targets = [t for t in targets if t.env.base.name in bases]
    if args.spread:
        targets = spread(targets)
    targets = shard(targets, args.shard)
    targets += [local_target(spec, versions, sets, metadata, _read_version) for spec in args.local]
    if args.list:
        print(render_plan(targets))
        return 0
    if not targets and args.base:
        # A job of a base x package matrix whose base serves none of the package's releases.
        print(f"canary sweep: no release of {', '.join(packages)} has base {args.base}")
        return 0
    if not targets:
        raise ConfigError("--sweep: no release selected (check --only)")
    environ = dict(os.environ)
    # Not runtime-venvs: a runner there drops every other digest of a set it builds.
    root = cache / "sweep-venvs"
    ctx = SweepContext(
        root=root,
        reports=args.report_dir or cache / "runtime-reports" / "sweep",
        repo=repo,
        python=Python.current(),
        installer=choose_installer(args.installer, run, environ),
        project=read_project_table(repo),
        run=run,
        environ=environ,
        pytest_args=(*shlex.split(args.pytest_args), *passthrough),
        timeout=args.timeout,
        keep_overlays=not args.drop_overlays,
    )
    results = sweep(targets, ctx)
    status = 0 if all(r.status is Status.OK for r in results) else 1
    print(render_results(results))
    print(f"\nenvironments on disk: {disk_use(root) / 1e9:.2f} GB under {root}", file=sys.stderr)
    if args.json:
        write_json(args.json, results, exitstatus=status)
    return status
