"""``python -m canary``: maintenance commands beside the pytest suite.

* ``tags [--update]``: show tags.toml, or resolve every package's releases from the
  package index and rewrite the version lists (comments and hand-written keys kept).
* ``runtime [--pins NAME|all]``: build one environment per pin set and run the runtime
  tier in each (see :mod:`canary.runtime.runner`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from canary.errors import CanaryError
from canary.tags import load_tags, update_tags_file


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["runtime"]:
        from canary.runtime.runner import main as runtime_main

        return runtime_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m canary", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    tags = commands.add_parser("tags", help="show or update tags.toml")
    tags.add_argument("--file", type=Path, default=Path("tags.toml"), help="default: ./tags.toml")
    tags.add_argument(
        "--update", action="store_true", help="resolve every stable release >= floor from the index"
    )
    commands.add_parser("runtime", help="run the runtime tier per pin set (--help for options)")
    args = parser.parse_args(argv)
    try:
        return _tags(args.file, update=args.update)
    except CanaryError as exc:
        print(f"canary: error: {exc}", file=sys.stderr)
        return 2


def _tags(path: Path, *, update: bool) -> int:
    if update:
        for package, (added, removed) in update_tags_file(path).items():
            change = ", ".join(
                part
                for part in (
                    f"added {', '.join(added)}" if added else "",
                    f"removed {', '.join(removed)}" if removed else "",
                )
                if part
            )
            print(f"{package}: {change or 'unchanged'}")
    for package in load_tags(path).packages.values():
        print(
            f"{package.name}: {len(package.versions)} releases "
            f"{package.versions[0]} .. {package.versions[-1]} (floor {package.floor}); "
            f"anchors {', '.join(package.anchors) or 'none'}; broken {len(package.broken)}"
        )
    return 0
