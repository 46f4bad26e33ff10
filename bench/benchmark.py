"""How fast the static tier is, as ratios measured in one run.

    python bench/benchmark.py                 # everything (minutes; the cold run downloads ~1 GB)
    python bench/benchmark.py --skip-cold     # warm run and the install-and-import comparison
    python bench/benchmark.py --skip-compare  # warm, cold and the download floor

Measures, on this machine:

* **warm**: ``pytest canary --canary-offline`` over every release in tags.toml, with the
  cache you already have: wall time, cases, time per case.
* **warm against pytest's floor**: the warm run (every outcome remembered) and pytest alone
  running as many trivial parametrized cases with as many skipped, alternating, three each:
  median wall time and peak RSS of each (``--skip-floor`` leaves it out).
* **after a change**: the first run after one check of the catalog changed (one check's
  text is edited for the run and restored after it) and after a canary upgrade (every
  outcome checked again: ``--canary-recompute``), each against the warm run; then the
  results of the recomputed run and of a warm run, compared case by case.
* **cold**: the same run with ``CANARY_CACHE_DIR`` pointed at an empty temporary folder
  (deleted afterwards; your cache is never touched), against the **floor**: only
  ``pip download`` of the same wheels, with the same parallelism. pip's own HTTP cache is
  off for both (``PIP_NO_CACHE_DIR``) unless ``--pip-cache``, so both really download.
* **install-and-import**: what users would otherwise do: ``pip install --no-deps
  --target`` each of three releases into its own folder and import every module the
  catalog's checks read for that package, calling ``inspect.signature`` on everything
  those modules define; against the canary checking the same releases (warm cache).
  Each release's dependencies (torch, ...) are installed beforehand into a folder of its
  own, resolved for that release, and not counted; a release that fails to import stops
  the benchmark rather than shrinking the comparison.
* **where the time goes**: collection, fetching, parsing and the checks themselves.

The catalog is read from the run itself (which files each package's checks read), never
from a list kept here. Numbers from a shared or busy machine are noisy: run it twice.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from canary.sources.piprun import run_pip

REPO = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
PIP = (sys.executable, "-m", "pip")


@dataclass
class Run:
    """One timed ``pytest canary`` and what its plugin recorded."""

    wall_s: float
    report: dict
    returncode: int
    peak_rss_mb: float = 0.0

    @property
    def cases(self) -> int:
        return int(self.report.get("items", 0))

    @property
    def stats(self) -> dict:
        return self.report.get("stats", {})


def run_canary(args: list[str], env: dict[str, str], work: Path, name: str) -> Run:
    out = work / f"{name}.json"
    env = {
        **env,
        "CANARY_BENCH_OUT": str(out),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(BENCH), env.get("PYTHONPATH")])),
    }
    command = [sys.executable, "-m", "pytest", "canary", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "canary_bench_plugin", *args]
    done = timed(command, env, REPO, work / f"{name}.out")
    if not out.is_file():
        sys.exit(f"`{' '.join(command)}` recorded nothing:\n{done.output[-3000:]}")
    return Run(done.wall_s, json.loads(out.read_text()), done.returncode, done.peak_rss_mb)


@dataclass
class Timed:
    wall_s: float
    peak_rss_mb: float
    returncode: int
    output: str


def timed(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> Timed:
    """Run ``command``, its output to ``log``: wall time and the process's own peak RSS."""
    with log.open("w") as stream:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=stream, stderr=stream)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss is in KiB on Linux.
    return Timed(wall, usage.ru_maxrss / 1024, process.returncode, log.read_text())


# -- pytest's own floor: as many trivial cases, as many skipped ------------------------------

FLOOR_MODULE = """
import pytest

SKIP = pytest.mark.skip(reason="outside the window")


@pytest.mark.parametrize(
    "case", [pytest.param(n, marks=[SKIP] if n < {skipped} else []) for n in range({cases})]
)
def test_case(case):
    pass
"""


def pytest_floor(cases: int, skipped: int, env: dict[str, str], work: Path) -> Timed:
    """pytest alone running ``cases`` trivial parametrized cases, ``skipped`` of them
    skipped by a mark, with the same options and the same installed plugins."""
    folder = work / "floor-project"
    folder.mkdir(exist_ok=True)
    (folder / "test_floor.py").write_text(FLOOR_MODULE.format(cases=cases, skipped=skipped))
    command = [sys.executable, "-m", "pytest", "test_floor.py", "-q", "-p", "no:cacheprovider"]
    done = timed(command, env, folder, work / "floor.out")
    if done.returncode != 0:
        sys.exit(f"the floor run failed:\n{done.output[-3000:]}")
    return done


def warm_versus_floor(env: dict[str, str], work: Path, args: list[str], rounds: int = 3) -> Run:
    warms: list[Run] = []
    floors: list[Timed] = []
    for n in range(rounds):  # alternating, so a busy spell weighs on both
        warms.append(run_canary(["--canary-offline", *args], env, work, f"warm-{n}"))
        skipped = warms[-1].report["outcomes"].get("skipped", 0)
        floors.append(pytest_floor(warms[-1].cases, skipped, env, work))
    warm = statistics.median(r.wall_s for r in warms)
    floor = statistics.median(f.wall_s for f in floors)
    middle = sorted(warms, key=lambda r: r.wall_s)[len(warms) // 2]
    print(f"\nwarm `pytest canary --canary-offline` against pytest's floor, {rounds} each:")
    print(f"  warm: {describe(middle)}")
    print(f"    remembered: {middle.stats.get('outcomes_remembered', 0):,.0f} outcomes")
    print(f"    walls {', '.join(f'{r.wall_s:.1f}' for r in warms)} s")
    print(
        f"  floor: pytest alone, {middle.cases} trivial cases, "
        f"{middle.report['outcomes'].get('skipped', 0)} skipped: walls "
        f"{', '.join(f'{f.wall_s:.1f}' for f in floors)} s"
    )
    print(f"  warm / floor (medians) = {warm / floor:.2f}x (target <= 1.3x)")
    print(
        f"  peak RSS: warm {max(r.peak_rss_mb for r in warms):.0f} MB, "
        f"floor {max(f.peak_rss_mb for f in floors):.0f} MB"
    )
    return middle


# -- after a change: one check, or canary itself -------------------------------------------

CHANGED_CHECKS = REPO / "canary" / "checks" / "test_transformers.py"


@contextlib.contextmanager
def one_check_changed(module: Path = CHANGED_CHECKS) -> Iterator[str]:
    """The first ``@check`` function of ``module`` given one more statement for the block
    (its outcomes are then not the ones remembered); the file is restored after."""
    original = module.read_text()
    tree = ast.parse(original)
    function = next(
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and node.name.startswith("test_")
        and node.decorator_list
    )
    lines = original.splitlines(keepends=True)
    indent = " " * function.body[-1].col_offset
    lines.insert(function.end_lineno or 0, f"{indent}assert True  # the benchmark's change\n")
    module.write_text("".join(lines))
    try:
        yield function.name
    finally:
        module.write_text(original)


def after_changes(env: dict[str, str], work: Path, args: list[str], warm: Run) -> None:
    offline = ["--canary-offline", *args]
    with one_check_changed() as name:
        changed = run_canary(offline, env, work, "one-check")
    # Put the check's remembered outcomes back as they were, untimed.
    run_canary(offline, env, work, "one-check-restored")
    upgraded = run_canary(
        [*offline, "--canary-recompute", f"--canary-json={work / 'recomputed.json'}"],
        env,
        work,
        "upgrade",
    )
    again = run_canary([*offline, f"--canary-json={work / 'remembered.json'}"], env, work, "again")
    remembered = warm.stats.get("outcomes_remembered", 0)
    ran = remembered - changed.stats.get("outcomes_remembered", 0)
    print(f"\nthe first run after a change to one check ({name}):")
    print(f"  {describe(changed)}; {ran:,.0f} of {remembered:,.0f} outcomes checked again")
    print(f"  / warm = {changed.wall_s / warm.wall_s:.2f}x; peak RSS {changed.peak_rss_mb:.0f} MB")
    print("\n".join(breakdown(changed)))
    print("the first run after a canary upgrade (every outcome checked again):")
    print(f"  {describe(upgraded)}")
    ratio = upgraded.wall_s / warm.wall_s
    print(f"  / warm = {ratio:.2f}x; peak RSS {upgraded.peak_rss_mb:.0f} MB")
    print("\n".join(breakdown(upgraded)))
    same, differing = compare_results(work / "recomputed.json", work / "remembered.json")
    print(
        f"results of the recomputed run and of the next (remembered) run: {same:,} cases "
        f"identical, {len(differing)} differing{': ' if differing else ''}"
        f"{', '.join(differing[:5])}; exit status {upgraded.returncode} and {again.returncode}"
    )


def compare_results(first: Path, second: Path) -> tuple[int, list[str]]:
    """How many cases two results files give alike (durations and dates aside), and the
    node ids of those they do not."""

    def cases(path: Path) -> dict[str, dict]:
        data = json.loads(path.read_text())
        return {c["nodeid"]: {k: v for k, v in c.items() if k != "duration"} for c in data["cases"]}

    one, two = cases(first), cases(second)
    differing = sorted(n for n in one.keys() | two.keys() if one.get(n) != two.get(n))
    return len(one.keys() & two.keys()) - len(differing), differing


def describe(run: Run) -> str:
    outcomes = ", ".join(f"{n} {k}" for k, n in sorted(run.report["outcomes"].items()))
    return f"{run.wall_s:.1f} s wall, {run.cases} cases ({outcomes})"


def breakdown(run: Run) -> list[str]:
    report, stats = run.report, run.stats
    startup = report["collection_s"]
    rest = run.wall_s - report["session_s"]
    return [
        f"  python + pytest startup and collection: {startup:.1f} s "
        f"(+{rest:.1f} s interpreter start/exit outside the session)",
        f"  fetching: {stats.get('fetch_seconds', 0):.1f} s summed over the fetch threads, "
        f"{stats.get('files_fetched', 0):.0f} files fetched, "
        f"{stats.get('files_from_cache', 0):.0f} from cache, "
        f"{stats.get('bytes_downloaded', 0) / 1e6:,.0f} MB downloaded",
        f"  parsing: {stats.get('parse_seconds', 0):.1f} s of CPU over the parse processes, "
        f"{stats.get('modules_parsed', 0):.0f} files parsed, "
        f"{stats.get('modules_from_cache', 0):.0f} code indexes from the parse cache",
        f"  checks waiting for their files (setup): {report['setup_s']:.1f} s; "
        f"the checks themselves: {report['call_s']:.2f} s "
        f"({1000 * report['call_s'] / max(run.cases, 1):.2f} ms per case)",
    ]


# -- the floor: only downloading the same wheels ------------------------------------------


def pip_download_all(
    wheels: list[tuple[str, str]], workers: int, env: dict, dest: Path, *, warm: bool = False
) -> float:
    """Seconds to ``pip download`` every wheel, ``workers`` at a time: each a fresh
    ``python -m pip``, or with ``warm`` through canary's own downloader (one interpreter
    per worker that imported pip once, forked per wheel: :mod:`canary.sources.piprun`)."""

    def one(spec: tuple[str, str]) -> None:
        package, version = spec
        folder = dest / f"{package}-{version}"
        folder.mkdir(parents=True)
        args = ["download", "--no-deps", "--only-binary=:all:", "--no-input", "--quiet"]
        args += ["--dest", str(folder), f"{package}=={version}"]
        if warm:
            done = run_pip(PIP, args, timeout=900)
            if done.returncode != 0:
                raise RuntimeError(f"pip {' '.join(args)} failed: {done.stderr[-500:]}")
        else:
            subprocess.run([*PIP, *args], env=env, check=True, capture_output=True)

    with environment(env) if warm else contextlib.nullcontext():
        started = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(one, wheels))
        return time.perf_counter() - started


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` is ``env`` inside (in-process code reads nothing else)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def kept_wheels(cache_dir: Path) -> list[tuple[str, str]]:
    found = []
    for wheel in sorted((cache_dir / "wheels").glob("*/*.whl")):
        package = wheel.parent.name
        found.append((package, wheel.stem.removeprefix(f"{package}-")))
    return found


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


# -- install and import --------------------------------------------------------------------

INTROSPECT = textwrap.dedent(
    """
    import importlib, inspect, json, sys, time
    started = time.perf_counter()
    seen = 0
    failed = {}
    for name in json.loads(sys.argv[1]):
        try:
            module = importlib.import_module(name)
        except ImportError as exc:  # e.g. a GPU-only kernel module needing triton
            failed[name] = f"{type(exc).__name__}: {exc}"
            continue
        for value in list(vars(module).values()):
            if getattr(value, "__module__", None) != name:
                continue
            members = [value] + (list(vars(value).values()) if inspect.isclass(value) else [])
            for member in members:
                if callable(member):
                    try:
                        inspect.signature(member)
                        seen += 1
                    except (TypeError, ValueError):
                        pass
            hasattr(value, "accepts_loss_kwargs")
    print(json.dumps({"signatures": seen, "failed": failed}))
    """
)


def module_names(package: str, reads: list[str]) -> list[str]:
    names = []
    for path in reads:
        if path.startswith(f"{package}/") and path.endswith(".py"):
            name = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
            names.append(name)
    return sorted(set(names))


def install_and_import(
    package: str, versions: list[str], modules: list[str], *, deps: list[str], work: Path, env: dict
) -> tuple[float, list[str]]:
    """Seconds to install each release and introspect the modules, and a line per release.

    Each release gets its own dependency folder, resolved for that release (installed
    beforehand, not timed): one folder shared by all three holds one release's choices,
    and the other releases then fail to import against it, which measures nothing.
    """
    lines, total = [], 0.0
    for version in versions:
        base = work / f"deps-{version}"
        print(f"  (not timed) installing {package} {version}'s dependencies into {base} ...")
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(base)]
        command += [f"{package}=={version}", *deps]
        # pip's own cache may serve the dependencies: they are not what is measured.
        dep_env = {k: v for k, v in env.items() if k != "PIP_NO_CACHE_DIR"}
        subprocess.run(command, env=dep_env, check=True, capture_output=True)
        for stale in base.glob(f"{package}*"):  # the timed install brings its own copy
            shutil.rmtree(stale)
        target = work / f"{package}-{version}"
        started = time.perf_counter()
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        command += ["--target", str(target), f"{package}=={version}"]
        subprocess.run(command, env=env, check=True, capture_output=True)
        installed = time.perf_counter() - started
        done = subprocess.run(
            [sys.executable, "-c", INTROSPECT, json.dumps(modules)],
            env={**env, "PYTHONPATH": f"{target}{os.pathsep}{base}"},
            check=False,
            capture_output=True,
            text=True,
        )
        both = time.perf_counter() - started
        shutil.rmtree(target, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or ["?"])[-1]
            # A release that does not import measured nothing: the ratio would be a lie.
            sys.exit(f"{package} {version} did not import against its own dependencies: {why}")
        total += both
        result = json.loads(done.stdout.strip().splitlines()[-1])
        failed = result["failed"]
        if len(failed) == len(modules):
            sys.exit(f"{package} {version}: none of the modules imported: {failed}")
        lines.append(
            f"  {package} {version}: install {installed:.1f} s + import and inspect "
            f"{both - installed:.1f} s ({len(modules) - len(failed)} of {len(modules)} "
            f"modules imported, {result['signatures']} signatures)"
        )
        # Modules that need what a CPU machine lacks are left out, which only shortens
        # the install-and-import side: the ratio errs in its favour.
        lines += [f"    not importable: {name} ({why[:120]})" for name, why in failed.items()]
    return total, lines


def cold_versus_floor(env: dict[str, str], work: Path, workers: int) -> None:
    cold_cache = work / "cold-cache"
    cold_env = {**env, "CANARY_CACHE_DIR": str(cold_cache)}
    cold = run_canary(["--canary-workers", str(workers)], cold_env, work, "cold")
    wheels = kept_wheels(cold_cache)
    downloaded = folder_bytes(cold_cache / "wheels")
    shutil.rmtree(cold_cache, ignore_errors=True)
    floor_dir = work / "floor"
    floor = pip_download_all(wheels, workers, env, floor_dir)
    floor_bytes = folder_bytes(floor_dir)
    shutil.rmtree(floor_dir, ignore_errors=True)
    print(f"\ncold `pytest canary` (empty cache): {describe(cold)}")
    print(f"  {downloaded / 1e6:,.0f} MB of wheels ({len(wheels)} wheels)")
    print("\n".join(breakdown(cold)))
    print(
        f"floor: `pip download` of the same {len(wheels)} wheels, {workers} "
        f"at a time: {floor:.1f} s, {floor_bytes / 1e6:,.0f} MB"
    )
    print(f"  cold / floor = {cold.wall_s / floor:.2f}x (target <= 1.3x)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-cold", action="store_true", help="no cold run and floor")
    parser.add_argument("--skip-compare", action="store_true", help="no install-and-import")
    parser.add_argument("--skip-warm", action="store_true", help="no warm full run")
    parser.add_argument(
        "--skip-floor", action="store_true", help="no warm runs against pytest's own floor"
    )
    parser.add_argument(
        "--skip-changes", action="store_true", help="no runs after a change to a check or canary"
    )
    parser.add_argument("--workers", type=int, default=4, help="--canary-workers and the floor's")
    parser.add_argument(
        "--compare",
        default="transformers=5.5.3,5.6.0,5.19.0",
        metavar="PKG=V1,V2,V3",
        help="the releases of the install-and-import comparison",
    )
    parser.add_argument(
        "--deps",
        default="torch==2.13.0+cpu accelerate",
        help="requirements installed once beside the compared releases (pin torch: an "
        "unpinned one may pull a multi-GB CUDA build)",
    )
    parser.add_argument("--pip-cache", action="store_true", help="let pip use its HTTP cache")
    parser.add_argument(
        "--work-dir", type=Path, help="keep downloads and installs here (default: a temp dir)"
    )
    options = parser.parse_args(argv)

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if not options.pip_cache:
        env["PIP_NO_CACHE_DIR"] = "1"
    work = options.work_dir or Path(tempfile.mkdtemp(prefix="canary-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    workers = ["--canary-workers", str(options.workers)]
    print(f"canary benchmark ({os.cpu_count()} cores, python {sys.version.split()[0]})")

    try:
        warm = run_canary(["--canary-offline", *workers], env, work, "warm")
        if not options.skip_warm:
            print(f"\nwarm `pytest canary --canary-offline`: {describe(warm)}")
            print(f"  {1000 * warm.wall_s / max(warm.cases, 1):.1f} ms per case, wall")
            print("\n".join(breakdown(warm)))
        if not options.skip_floor:
            warm = warm_versus_floor(env, work, workers)
        if not options.skip_changes:
            after_changes(env, work, workers, warm)

        if not options.skip_cold:
            cold_versus_floor(env, work, options.workers)
        if not options.skip_compare:
            package, _, listed = options.compare.partition("=")
            versions = [v.strip() for v in listed.split(",") if v.strip()]
            modules = module_names(package, warm.report["reads"].get(package, []))
            tags = ",".join(versions)
            ids = " or ".join(f"{package}_{v.replace('.', '_')}" for v in versions)
            ours = run_canary(
                ["--canary-offline", f"--canary-tags={package}={tags}", "-k", ids],
                env,
                work,
                "compare",
            )
            print(
                f"\ninstall-and-import vs canary on {package} {', '.join(versions)} "
                f"({len(modules)} modules the catalog reads)"
            )
            theirs, lines = install_and_import(
                package,
                versions,
                modules,
                deps=options.deps.split(),
                work=work / "install",
                env=env,
            )
            print("\n".join(lines))
            print(f"  install-and-import: {theirs:.1f} s")
            print(f"  canary (warm cache, same releases): {describe(ours)}")
            print(f"  install-and-import / canary = {theirs / ours.wall_s:.1f}x (target >= 20x)")
    finally:
        if options.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
