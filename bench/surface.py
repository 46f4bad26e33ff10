"""How fast ``python -m canary surface`` is, as ratios measured in one run.

    python bench/surface.py                          # the four projects, warm and cold
    python bench/surface.py --skip-cold              # extraction and warm resolution only
    python bench/surface.py dist/my-1.0-py3-none-any.whl --cold-tags transformers=5.5
    python bench/surface.py my.whl --cold-only --cold-tags transformers=5.0.0,5.5.0
    python bench/surface.py my.whl --cold-only --rounds 3   # every release, median of 3

Measures, on this machine, for each target (default: the newest unsloth, unsloth_zoo,
liger-kernel and axolotl wheels, downloaded first, untimed):

* **extraction**: opening the wheel and extracting its references (target: under 10 s
  for the largest project), and the references by kind;
* **warm**: resolving them over every release in tags.toml with the cache you already
  have (target: under 30 s per project). The first pass decides whatever the cache does
  not hold yet (after a change to the resolver: everything) and is shown too;
* **cold**: every target at once with ``CANARY_CACHE_DIR`` pointed at an empty temporary
  folder (your cache is never touched), against the **floor**: only ``pip download`` of
  the same wheels, as many at a time, each a fresh ``python -m pip`` (target: within
  1.5x), and against canary's own downloads of them alone (pip imported once per worker,
  :mod:`canary.sources.piprun`): what resolving adds to downloading. pip's HTTP cache is
  off for all three. ``--cold-tags`` narrows the releases of the cold part (a full one
  downloads every wheel in tags.toml, ~1 GB).

Numbers from a shared or busy machine are noisy (the floor of one cold liger run over every
release took 72-101 s within the hour): ``--rounds`` alternates cold run and floor and
prints the median ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmark import environment, folder_bytes, kept_wheels, pip_download_all

from canary.surface.command import SurfaceOptions, SurfaceRun, run_surface

REPO = Path(__file__).resolve().parents[1]
PROJECTS = ("unsloth", "unsloth_zoo", "liger-kernel", "axolotl")


def newest_wheels(names: list[str], folder: Path, env: dict[str, str]) -> list[Path]:
    """The newest wheel of each project on the index, downloaded once into ``folder``."""
    wheels = []
    for name in names:
        before = set(folder.glob("*.whl"))
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        command += ["--no-input", "--quiet", "--dest", str(folder), name]
        subprocess.run(command, env=env, check=True, capture_output=True)
        new = set(folder.glob("*.whl")) - before
        stem = name.replace("-", "_").lower()
        wheels.append(next(iter(new)) if new else max(folder.glob(f"{stem}-*.whl")))
    return wheels


def surface(targets: list[Path], tags: list[str], *, offline: bool, workers: int) -> SurfaceRun:
    options = SurfaceOptions(
        targets=tuple(str(t) for t in targets),
        tags=tuple(tags),
        offline=offline,
        tags_file=REPO / "tags.toml",
        workers=workers,
    )
    return run_surface(options)


def describe(run: SurfaceRun) -> str:
    cells = sum(len(r.outcomes) for r in run.result.references)
    releases = sum(len(v) for v in run.result.packages.values())
    seconds = ", ".join(f"{phase} {s:.1f} s" for phase, s in run.seconds.items())
    return (
        f"{len(run.result.references):,} references x {releases} releases ({cells:,} outcomes; "
        f"{run.recalled:,} recalled, {run.decided:,} decided): {seconds}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "targets", nargs="*", type=Path, help="wheels or folders (default: the four)"
    )
    parser.add_argument("--tags", action="append", default=[], help="as --canary-tags (warm)")
    parser.add_argument(
        "--cold-tags", action="append", default=[], help="as --canary-tags, for the cold part"
    )
    parser.add_argument("--skip-cold", action="store_true", help="no cold run and floor")
    parser.add_argument(
        "--cold-only", action="store_true", help="only the cold run and its floor (no warm part)"
    )
    parser.add_argument("--workers", type=int, default=4, help="parallel downloads, both sides")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="cold run then floor, this many times (a shared machine's load drifts: the median)",
    )
    parser.add_argument("--work-dir", type=Path, help="keep downloads here (default: a temp dir)")
    options = parser.parse_args(argv)

    env = {**os.environ, "PIP_NO_CACHE_DIR": "1"}
    work = options.work_dir or Path(tempfile.mkdtemp(prefix="canary-surface-bench-"))
    (work / "targets").mkdir(parents=True, exist_ok=True)
    print(f"canary surface benchmark ({os.cpu_count()} cores, python {sys.version.split()[0]})")
    try:
        targets = options.targets or newest_wheels(list(PROJECTS), work / "targets", env)
        for target in () if options.cold_only else targets:
            first = surface([target], options.tags, offline=True, workers=options.workers)
            warm = surface([target], options.tags, offline=True, workers=options.workers)
            kinds = Counter(r.reference.kind.value for r in warm.result.references)
            print(f"\n{target.name}: " + ", ".join(f"{k} {n:,}" for k, n in kinds.most_common()))
            print(f"  extraction: {warm.seconds['extract']:.1f} s (target < 10 s)")
            print(f"  first pass: {describe(first)}")
            print(f"  warm:       {describe(warm)}")
            print(f"  warm resolution: {warm.seconds['resolve']:.1f} s (target < 30 s)")
        if not options.skip_cold:
            rounds = [
                cold_versus_floor(targets, options.cold_tags, work, env, options.workers)
                for _ in range(max(1, options.rounds))
            ]
            if len(rounds) > 1:
                for name, ratios, target in (
                    ("cold / floor", [floor for floor, _ in rounds], " (target <= 1.5x)"),
                    ("cold / own downloads", [own for _, own in rounds], ""),
                ):
                    listed = ", ".join(f"{r:.2f}x" for r in ratios)
                    print(
                        f"\n{name} over {len(ratios)} rounds: {listed}; median "
                        f"{statistics.median(ratios):.2f}x{target}"
                    )
    finally:
        if options.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def cold_versus_floor(
    targets: list[Path], tags: list[str], work: Path, env: dict[str, str], workers: int
) -> tuple[float, float]:
    """One cold run into an empty cache, then the floor and canary's own downloads alone;
    prints all three, returns cold / floor and cold / own downloads."""
    cold_cache = work / "cold-cache"
    with environment({**env, "CANARY_CACHE_DIR": str(cold_cache)}):  # pip's cache off too
        started = time.perf_counter()
        cold = surface(targets, tags, offline=False, workers=workers)
        wall = time.perf_counter() - started
    wheels = kept_wheels(cold_cache)
    downloaded = folder_bytes(cold_cache / "wheels")
    shutil.rmtree(cold_cache, ignore_errors=True)
    floor_dir = work / "floor"
    floor = pip_download_all(wheels, workers, env, floor_dir)
    shutil.rmtree(floor_dir, ignore_errors=True)
    own = pip_download_all(wheels, workers, env, floor_dir, warm=True)
    shutil.rmtree(floor_dir, ignore_errors=True)
    print(f"\ncold (empty cache), every target at once: {wall:.1f} s wall")
    print(f"  {describe(cold)}")
    print(f"  {downloaded / 1e6:,.0f} MB of wheels ({len(wheels)} wheels)")
    print(
        f"floor: `pip download` of the same {len(wheels)} wheels, {workers} at a time: "
        f"{floor:.1f} s"
    )
    print(f"  cold / floor = {wall / floor:.2f}x (target <= 1.5x)")
    print(f"canary's own downloads of them alone (pip imported once per worker): {own:.1f} s")
    print(f"  cold / own downloads = {wall / own:.2f}x (what resolving adds to downloading)")
    return wall / floor, wall / own


if __name__ == "__main__":
    raise SystemExit(main())
