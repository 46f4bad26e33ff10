"""``python -m canary``: maintenance commands beside the pytest suite.

* ``tags [--update]``: show tags.toml, or resolve every package's releases from the
  package index and rewrite the version lists (comments and hand-written keys kept).
  ``tags --new`` prints ``--canary-tags`` arguments for the stable releases on the index
  that tags.toml does not list yet (nothing on stdout when there are none; stderr says so).
* ``runtime [--pins NAME|all]``: build one environment per pin set and run the runtime
  tier in each (see :mod:`canary.runtime.runner`).
* ``report RESULTS.json... [--format terminal|markdown|json|github]``: the matrix of a run
  written by ``pytest canary --canary-json RESULTS.json``. Exit status: 0 all clear, 1
  drift found, 2 nothing or not everything was checked (errors, an unreadable file).
* ``surface TARGET... [--tags PKG=V1,V2] [--offline] [--format ...] [-o FILE] [--baseline
  FILE [--update-baseline]]``: every upstream symbol, patch target and source anchor a
  project uses, on every release (see :mod:`canary.surface.command`). Exit status: 0
  nothing missing, 1 missing inside a target's declared range, 2 not everything checked.

Every command that reads tags.toml takes ``--tags-file PATH`` (``--canary-tags-file`` under
pytest). Output piped into a reader that stops early (``| head``) ends quietly.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from canary.atomic import write_atomically
from canary.errors import CanaryError, ConfigError
from canary.report.render import FORMATS
from canary.tags import SHIPPED_TAGS, load_tags, stable_releases, update_tags_file
from canary.workspace import Case

TAGS_FILE = "--tags-file"  # how every command here spells "another tags.toml"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        status = _command(argv)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
    except BrokenPipeError:
        # The reader (head, less) has what it wanted; the rest goes nowhere, quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return status


def _command(argv: list[str]) -> int:
    if argv[:1] == ["runtime"]:
        from canary.runtime.runner import main as runtime_main

        return runtime_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return _dispatch(args)
    except CanaryError as exc:
        print(f"canary: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        raise  # main() ends quietly: the reader has what it wanted
    except Exception as exc:  # canary's own bug: 2 ("nothing proven"), never 1 ("drift")
        traceback.print_exc()
        print(
            f"canary: error: {args.command} crashed ({type(exc).__name__}: {exc}); nothing "
            f"is proven either way",
            file=sys.stderr,
        )
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "report":
        return _report(args)
    if args.command == "surface":
        return _surface(args)
    if args.new:
        return _new_tags(args.tags_file)
    return _tags(args.tags_file, update=args.update)


def build_parser() -> argparse.ArgumentParser:
    """The commands' parser (``runtime`` has its own: :mod:`canary.runtime.runner`)."""
    parser = argparse.ArgumentParser(prog="python -m canary", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    tags = commands.add_parser("tags", help="show or update tags.toml")
    tags.add_argument(
        "--tags-file", type=Path, default=Path("tags.toml"), help="default: ./tags.toml"
    )
    # The old spelling, kept so existing scripts still work.
    tags.add_argument("--file", dest="tags_file", type=Path, help=argparse.SUPPRESS)
    tags_action = tags.add_mutually_exclusive_group()
    tags_action.add_argument(
        "--update", action="store_true", help="resolve every stable release >= floor from the index"
    )
    tags_action.add_argument(
        "--new",
        action="store_true",
        help="print --canary-tags arguments for stable releases on the index not in tags.toml",
    )
    commands.add_parser("runtime", help="run the runtime tier per pin set (--help for options)")
    report = commands.add_parser(
        "report",
        help="render the matrix of a --canary-json results file",
        description="Render the matrix of a run. Exit status: 0 all clear, 1 drift found, "
        "2 infrastructure errors or nothing checked.",
    )
    report.add_argument(
        "results",
        type=Path,
        nargs="+",
        help="results of `pytest canary --canary-json PATH`; several are merged, a later "
        "one's cases replacing an earlier one's (e.g. releases, then a --canary-local tree)",
    )
    report.add_argument("--format", choices=FORMATS, default="terminal", help="default: terminal")
    report.add_argument(
        "--no-diff", action="store_true", help="skip the upstream diff behind each drift"
    )
    report.add_argument(
        "--offline", action="store_true", help="read upstream for the diffs from the cache only"
    )
    report.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 whatever the run found (an unreadable results file still exits 2)",
    )
    _add_surface(commands)
    return parser


def _add_surface(commands: argparse._SubParsersAction) -> None:
    surface = commands.add_parser(
        "surface",
        help="every upstream symbol, patch target and anchor a project uses, on every release",
        description="Resolve a project's dependency surface against every release in "
        "tags.toml. Exit status: 0 nothing missing, 1 a reference missing on a release inside "
        "a target's declared range (not accepted), 2 not everything was checked.",
    )
    surface.add_argument(
        "targets", nargs="+", metavar="TARGET", help="a source folder, a .whl or NAME==VERSION"
    )
    surface.add_argument(
        "--tags",
        action="append",
        default=[],
        metavar="PKG=V1,V2",
        help="only these releases of PKG, as --canary-tags (repeatable)",
    )
    surface.add_argument(
        "--offline", action="store_true", help="the cache only; pip is never started"
    )
    surface.add_argument("--format", choices=FORMATS, default="terminal", help="default: terminal")
    surface.add_argument("-o", "--output", type=Path, help="write the report here, not stdout")
    surface.add_argument(
        "--json", type=Path, metavar="FILE", help="also write the JSON contract to FILE"
    )
    surface.add_argument(
        "--markdown", type=Path, metavar="FILE", help="also write the Markdown report to FILE"
    )
    surface.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="accept the findings recorded in FILE: only new ones fail",
    )
    surface.add_argument(
        "--update-baseline",
        action="store_true",
        help="(re)write --baseline FILE with every current finding, and exit 0",
    )
    surface.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="[tool.canary.surface] settings from FILE instead of each target's pyproject",
    )
    surface.add_argument(
        "--all",
        action="store_true",
        help="the report shows what is not counted too (misses outside the declared range, "
        "excused or undecided) and whole histories",
    )
    surface.add_argument(
        "--strict",
        action="store_true",
        help="possible findings (a site canary cannot prove runs there) fail the run too",
    )
    surface.add_argument(
        "--tags-file",
        type=Path,
        help="check exactly the releases this tags.toml lists (default: canary's own list, "
        "and the releases on the package index newer than it)",
    )
    listing = surface.add_mutually_exclusive_group()
    listing.add_argument(
        "--uncovered",
        action="store_true",
        help="list the private or patched references no catalog check reads, and exit 0",
    )
    listing.add_argument(
        "--stale",
        action="store_true",
        help="list the entries of canary/fixes/downstream.py the targets no longer use, and exit 0",
    )


def _tags(path: Path, *, update: bool) -> int:
    if update:
        for package, (added, removed) in update_tags_file(path, option=TAGS_FILE).items():
            change = ", ".join(
                part
                for part in (
                    f"added {', '.join(added)}" if added else "",
                    f"removed {', '.join(removed)}" if removed else "",
                )
                if part
            )
            print(f"{package}: {change or 'unchanged'}")
    for package in load_tags(path, option=TAGS_FILE).packages.values():
        print(
            f"{package.name}: {len(package.versions)} releases "
            f"{package.versions[0]} .. {package.versions[-1]} (floor {package.floor}); "
            f"anchors {', '.join(package.anchors) or 'none'}; broken {len(package.broken)}"
        )
    return 0


def _new_tags(path: Path) -> int:
    """One pytest argument per line (``mapfile -t args``): a ``--canary-tags`` per package
    with new releases, then ``-k`` and an expression selecting just those cases, so the
    packages without news are not rechecked."""
    selected: list[str] = []
    for package in load_tags(path, option=TAGS_FILE).packages.values():
        listed = set(package.versions)
        new = [v for v in stable_releases(package.name, package.floor) if v not in listed]
        if new:
            print(f"--canary-tags={package.name}={','.join(new)}")
            selected += [Case(package.name, version, "index").id for version in new]
    if selected:
        print("-k")
        print(" or ".join(selected))
    else:  # stdout stays empty: it is read as pytest arguments
        print(f"canary: every stable release on the index is listed in {path}", file=sys.stderr)
    return 0


def _surface(args: argparse.Namespace) -> int:
    from canary.surface import command

    if args.uncovered or args.stale:
        return _surface_listing(args)
    if args.update_baseline and args.baseline is None:
        raise ConfigError("--update-baseline needs --baseline FILE: the file to write")
    options = command.SurfaceOptions(
        targets=tuple(args.targets),
        tags=tuple(args.tags),
        offline=args.offline,
        tags_file=args.tags_file,
        config=args.config,
        baseline=args.baseline,
        update_baseline=args.update_baseline,
        also=tuple(
            (fmt, path) for fmt, path in (("json", args.json), ("markdown", args.markdown)) if path
        ),
        strict=args.strict,
        everything=args.all,
    )
    surface_run = command.run_surface(options, fmt=args.format)
    if args.output is not None:
        write_atomically(args.output, surface_run.text)
    else:
        sys.stdout.write(surface_run.text)
    sys.stdout.flush()
    for line in command.verdict(surface_run):
        print(line, file=sys.stderr)
    return surface_run.exit_status


def _surface_listing(args: argparse.Namespace) -> int:
    """``surface --uncovered`` / ``--stale``: what each target's extraction alone tells
    (nothing is resolved, no release is read)."""
    from canary.cache import Cache, default_cache_dir
    from canary.surface import coverage
    from canary.surface.pipeline import TARGETS_FOLDER, open_surface

    packages = tuple(load_tags(args.tags_file or SHIPPED_TAGS, option=TAGS_FILE).packages)
    download_dir = Cache(default_cache_dir()).root / TARGETS_FOLDER
    for spec in args.targets:
        opened = open_surface(
            spec,
            upstream=packages,
            download_dir=download_dir,
            offline=args.offline,
            config=args.config,
        )
        references, name = opened.surface.references, opened.surface.target.name
        if args.uncovered:
            sys.stdout.write(f"{name}: {coverage.uncovered_report(references)}")
        else:
            texts = {
                f: (opened.root / f).read_text("utf-8", errors="replace") for f in opened.files
            }
            sys.stdout.write(coverage.stale_report(references, name, texts))
    return 0


def _report(args: argparse.Namespace) -> int:
    from canary.report import render
    from canary.report.results import EXIT_CLEAR, load

    report = render.build(load(args.results), diffs=not args.no_diff, offline=args.offline)
    sys.stdout.write(render.render(report, args.format))
    return EXIT_CLEAR if args.exit_zero else report.exit_status
