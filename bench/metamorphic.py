"""The metamorphic test of the catalog: behaviour-preserving rewrites of released upstream
trees (tests/rewrites.py) must never change any check's outcome.

    python bench/metamorphic.py                        # the default spread of releases
    python bench/metamorphic.py --per-package 6 --kinds rename-locals,mixin
    python bench/metamorphic.py --tags trl=0.18.2,1.16.0 --out /tmp/mm

For each package, the releases checked are the first and last release of the package and
of every check's window (from the catalog's own ``@check`` declarations), topped up to
``--per-package`` spread evenly. Each release's wheel (from the canary cache, else ``pip
download``) is unpacked; the files the catalog reads, and the package modules they import,
are rewritten one kind at a time and all kinds together; ``pytest canary/checks`` runs on
each tree through ``--canary-local PKG@VERSION=PATH`` (the three packages in one run), and
every case's outcome is compared with the unrewritten tree's. Prints the table of rewrites x
releases with the cases whose outcome changed, and writes it as JSON under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from canary.sources.piprun import run_pip
from canary.tags import load_tags

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
sys.path.insert(0, str(REPO / "tests"))

from rewrites import KINDS, Rewrite, rewrite_tree  # noqa: E402  (a test helper, on sys.path)

PACKAGES = ("transformers", "trl", "peft")
CHECKS = tuple(f"canary/checks/test_{p}.py" for p in PACKAGES)
ALL = "all"


def catalog() -> dict[str, dict]:
    """Per package: the files its checks read and every window bound they declare."""
    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "catalog.json"
        env = {**os.environ, "CANARY_METAMORPHIC_OUT": str(out), "PYTHONPATH": str(BENCH)}
        command = [sys.executable, "-m", "pytest", *CHECKS, "--collect-only", "-q"]
        command += ["-p", "no:cacheprovider", "-p", "metamorphic_plugin", "--canary-offline"]
        done = subprocess.run(
            command, cwd=REPO, env=env, capture_output=True, text=True, check=False
        )
        if not out.is_file():
            sys.exit(f"collecting the catalog failed:\n{done.stdout[-3000:]}{done.stderr}")
        return json.loads(out.read_text())


def followed_attributes() -> dict[str, frozenset[str]]:
    """Per package, the attributes whose assignments its checks follow into module-level
    helpers: the target of every ``expect_*(..., TARGET, ..., helpers=...)`` in its check
    module (the rewrite moves exactly those assignments into helpers)."""
    import ast

    found: dict[str, frozenset[str]] = {}
    for package, path in zip(PACKAGES, CHECKS, strict=True):
        tree = ast.parse((REPO / path).read_text("utf-8"))
        constants = {
            t.id: s.value.value
            for s in tree.body
            if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant)
            for t in s.targets
            if isinstance(t, ast.Name)
        }
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and any(k.arg == "helpers" for k in node.keywords):
                target = node.args[1] if len(node.args) > 1 else None
                text = constants.get(target.id) if isinstance(target, ast.Name) else None
                if isinstance(target, ast.Constant):
                    text = target.value
                if isinstance(text, str) and text.startswith("self."):
                    names.add(text.removeprefix("self."))
        found[package] = frozenset(names)
    return found


def spread(versions: list[str], bounds: set[str], per_package: int) -> list[str]:
    """``per_package`` releases: the package's first and last, then the first and last
    release of the check windows (the releases either side of each window bound), taken
    evenly from oldest to newest; every window edge when ``per_package`` is 0."""
    ordered = sorted(versions, key=Version)
    edges = set()
    for bound in bounds:
        inside = [v for v in ordered if Version(v) >= Version(bound)]
        before = [v for v in ordered if Version(v) < Version(bound)]
        edges.update(inside[:1] + before[-1:])
    edges = sorted(edges - {ordered[0], ordered[-1]}, key=Version)
    room = len(edges) if per_package <= 0 else max(per_package - 2, 0)
    step = len(edges) / room if room and len(edges) > room else 1
    picked = [edges[int(i * step)] for i in range(min(room, len(edges)))]
    return sorted({ordered[0], ordered[-1], *picked}, key=Version)


def wheel(package: str, version: str, work: Path) -> Path:
    cache = Path(os.environ.get("CANARY_CACHE_DIR", Path.home() / ".cache" / "canary"))
    kept = cache / "wheels" / package / f"{package}-{version}.whl"
    if kept.is_file():
        return kept
    dest = work / "downloads"
    args = ["download", "--no-deps", "--only-binary=:all:", "--no-input", "--quiet"]
    done = run_pip(
        (sys.executable, "-m", "pip"), [*args, "--dest", str(dest), f"{package}=={version}"]
    )
    if done.returncode != 0:
        sys.exit(f"pip download {package}=={version} failed: {done.stderr[-500:]}")
    return next(dest.glob(f"{package}-{version}-*.whl"))


def unpack(package: str, version: str, work: Path) -> dict[str, str]:
    """The package's Python files of the release, path -> text."""
    with zipfile.ZipFile(wheel(package, version, work)) as archive:
        return {
            name: archive.read(name).decode("utf-8")
            for name in archive.namelist()
            if name.startswith(f"{package}/") and name.endswith(".py")
        }


def rewritten_paths(package: str, files: dict[str, str], reads: set[str]) -> set[str]:
    """What the catalog reads and the package modules those files import (a base class, a
    helper a check follows), as far as they exist."""
    import ast

    chosen = {p for p in reads if p in files}
    for path in list(chosen):
        folder = path.rsplit("/", 1)[0]
        for node in ast.walk(ast.parse(files[path])):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = folder.split("/")
                base = base[: len(base) - node.level + 1]
                dotted = "/".join([*base, *(node.module or "").split(".")]).strip("/")
            elif node.module and node.module.split(".")[0] == package:
                dotted = node.module.replace(".", "/")
            else:
                continue
            for candidate in (f"{dotted}.py", f"{dotted}/__init__.py"):
                if candidate in files:
                    chosen.add(candidate)
    return chosen


def write_tree(root: Path, files: dict[str, str], original: Path | None = None) -> None:
    """``files`` under ``root``; with ``original``, every other file of that tree linked in."""
    if original is not None:
        for path in original.rglob("*.py"):
            relative = path.relative_to(original).as_posix()
            if relative not in files:
                (root / relative).parent.mkdir(parents=True, exist_ok=True)
                (root / relative).symlink_to(path.resolve())
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def run_catalog(trees: dict[str, tuple[str, Path]], out: Path, cache: Path) -> dict:
    checks = [f"canary/checks/test_{p}.py" for p in trees]
    command = [sys.executable, "-m", "pytest", *checks, "-q", "-p", "no:cacheprovider"]
    command += ["--canary-json", str(out)]
    for package, (version, root) in trees.items():
        command += ["--canary-local", f"{package}@{version}={root}"]
    env = {**os.environ, "CANARY_CACHE_DIR": str(cache)}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if not out.is_file():
        sys.exit(f"`{' '.join(command)}` recorded nothing:\n{done.stdout[-3000:]}{done.stderr}")
    return json.loads(out.read_text())


def outcomes(results: dict) -> dict[tuple[str, str], tuple[str, str]]:
    return {
        (case["package"], case["check"]): (case["outcome"], case["message"][:300])
        for case in results["cases"]
    }


@dataclass
class Plan:
    releases: dict[str, list[str]]
    kinds: list[str]
    reads: dict[str, list[str]]
    followed: dict[str, frozenset[str]]
    work: Path


def run_slot(plan: Plan, slot: int) -> dict[str, dict[str, list]]:
    """One release of each package (the ``slot``-th of its spread), every kind: the cases
    whose outcome differs from the unrewritten trees', per kind."""
    picked = {p: v[slot] for p, v in plan.releases.items() if slot < len(v)}
    sources = {p: unpack(p, v, plan.work) for p, v in picked.items()}
    chosen = {p: rewritten_paths(p, sources[p], set(plan.reads.get(p, ()))) for p in picked}
    label = ",".join(f"{p}={v}" for p, v in picked.items())
    rows: dict[str, dict[str, list]] = {}
    base: dict = {}
    for kind in [None, *plan.kinds]:
        name = kind or "original"
        trees = {}
        for package, version in picked.items():
            folder = plan.work / f"{package}-{version}"
            if kind is None:
                write_tree(folder / name, sources[package])
            else:
                order = KINDS if kind == ALL else (Rewrite(kind),)
                files = {p: sources[package][p] for p in chosen[package]}
                files = rewrite_tree(files, order, followed=plan.followed[package])
                write_tree(folder / name, files, folder / "original")
            trees[package] = (version, folder / name)
        got = outcomes(run_catalog(trees, plan.work / f"{label}-{name}.json", plan.work / "cache"))
        if kind is None:
            base = got
            counts = Counter(outcome for outcome, _ in got.values())
            print(f"{label}: unrewritten {dict(counts)}", flush=True)
            continue
        changed = [
            {"package": p, "check": c, "before": base.get((p, c)), "after": got.get((p, c))}
            for (p, c) in sorted(set(base) | set(got))
            if (base.get((p, c)) or ("absent",))[0] != (got.get((p, c)) or ("absent",))[0]
        ]
        rows[name] = {label: changed}
        print(f"  {name:15} {len(changed)} changed", flush=True)
        for change in changed:
            before, after = change["before"] or ("-", ""), change["after"] or ("-", "")
            print(f"    {change['package']}::{change['check']}: {before[0]} -> {after[0]}: "
                  f"{after[1][:200]}", flush=True)  # fmt: skip
    return rows


def plan_of(args: argparse.Namespace) -> Plan:
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    known = [k.value for k in KINDS]
    for kind in kinds:
        if kind != ALL and kind not in known:
            sys.exit(f"--kinds: no rewrite {kind!r}; one of {', '.join(known)}, {ALL}")
    work = Path(args.out or tempfile.mkdtemp(prefix="metamorphic-"))
    if work.exists() and any(work.iterdir()):
        sys.exit(f"--out {work}: not empty; name a new folder")
    work.mkdir(parents=True, exist_ok=True)
    info = catalog()
    tags = load_tags(REPO / "tags.toml")
    given = dict(t.split("=", 1) for t in args.tags)
    releases = {}
    packages = [p.strip() for p in args.packages.split(",") if p.strip()]
    if unknown := set(packages) - set(PACKAGES):
        sys.exit(f"--packages: {', '.join(sorted(unknown))} not one of {', '.join(PACKAGES)}")
    for package in packages:
        if package in given:
            releases[package] = given[package].split(",")
        else:
            versions = list(tags.package(package).versions)
            bounds = set(info["bounds"].get(package, []))
            releases[package] = spread(versions, bounds, args.per_package)
    return Plan(releases, kinds, info["reads"], followed_attributes(), work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--per-package", type=int, default=6, help="releases per package (0: every window edge)"
    )
    parser.add_argument("--kinds", default=",".join(k.value for k in KINDS) + f",{ALL}")
    parser.add_argument("--tags", action="append", default=[], metavar="PKG=V1,V2")
    parser.add_argument("--packages", default=",".join(PACKAGES), help="which of them to check")
    parser.add_argument("--out", type=Path, default=None, help="an empty or new folder")
    started = time.perf_counter()
    plan = plan_of(parser.parse_args())
    reach = {p: sorted(v) for p, v in plan.followed.items()}
    print(f"helpers= reach follows: {reach}", flush=True)
    print(f"releases: {json.dumps(plan.releases)}", flush=True)
    table: dict[str, dict[str, list]] = defaultdict(dict)
    slots = max(len(v) for v in plan.releases.values())
    for slot in range(slots):
        for name, row in run_slot(plan, slot).items():
            table[name].update(row)
    wall = time.perf_counter() - started
    total = sum(len(c) for row in table.values() for c in row.values())
    summary = {"releases": plan.releases, "kinds": plan.kinds, "wall_s": wall}
    summary |= {"changed": total, "table": table}
    (plan.work / "metamorphic.json").write_text(json.dumps(summary, indent=1))
    print(f"\n{total} outcome changes over {len(plan.kinds)} rewrites x {slots} release slots; "
          f"{wall:.0f} s wall; details in {plan.work / 'metamorphic.json'}")  # fmt: skip
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
