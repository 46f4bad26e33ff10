"""A target: the project whose surface is extracted, from a source folder, a wheel file, or
``NAME==VERSION`` on the package index (a package name and one exact version, checked
before anything runs: :mod:`canary.sources.pin`; downloaded as a wheel only with ``pip
download --no-deps --only-binary=:all:`` through :class:`~canary.sources.index.IndexSource`,
whatever Python its wheel requires, kept in ``download_dir`` like released wheels; offline,
only a wheel already kept there is read). A wheel is unpacked by :mod:`canary.sources.unpack`:
its ``.py`` files and metadata, within limits; a target's code is read, never built,
installed, imported or run.

``Target.requires`` is the project's declared range on each upstream package, from the
wheel's ``Requires-Dist`` (or an unpacked wheel's ``*.dist-info/METADATA`` in a folder), or
a folder's first source of them among: an unpacked sdist's ``PKG-INFO`` (where it lists
``Requires-Dist``), ``pyproject.toml`` (``[project] dependencies`` and
``optional-dependencies``), ``setup.cfg`` (``install_requires``, ``extras_require``),
``*.egg-info/requires.txt``, and ``setup.py``'s literal ``install_requires=[...]`` and
``extras_require={...}`` (read as syntax, never run):

- requirements that always apply come first: no marker, or a marker that holds on this
  platform with no extra (``sys_platform != "darwin"``); several of them are all required,
  so their specifiers are joined (``>=4.52,<=5.17`` from two lines);
- a package required only through extras takes the smallest range holding every extra's
  (:func:`canary.surface.intervals.hull`: ``>=4.57.1`` for one extra's ``>=4.57.1`` and
  another's ``>=5.20.0``): no install through an extra has a release outside it. Where that
  range is unbounded both ways (an extra with no version), the package stays undeclared;
- an undeclared package is absent from ``requires`` (no release is outside its range), a
  package declared without a version is ``""``;
- each extra's own range (``Target.extras``: its lines that apply only through that one
  extra, joined) is what the code it is installed for needs: a miss only in modules named
  for that extra, on a release its range leaves out, is possible (:mod:`canary.surface.
  findings`).
"""

from __future__ import annotations

import ast
import configparser
import contextlib
import os
import re
import stat
import sys
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from packaging.markers import UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from canary.errors import ConfigError, FetchError, InfrastructureError
from canary.sources import version as versions
from canary.sources.index import KEPT_WHEELS, IndexSource
from canary.sources.pin import Pin, parse_pin
from canary.sources.unpack import WheelRefused, unpacked
from canary.surface.coinstall import core_requirements, metadata_requirements
from canary.surface.config import SurfaceConfig, config_from_table, load_config
from canary.surface.intervals import hull
from canary.surface.model import Target

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# The upstream distributions a requirement range is read for (tags.toml's packages).
UPSTREAM_PACKAGES = ("transformers", "trl", "peft")
# Folders of a source tree that hold no code of the project.
_SKIPPED_FOLDERS = frozenset(
    {".git", ".hg", ".venv", "venv", ".tox", ".nox", "build", "dist", "node_modules",
     "__pycache__", "site-packages", ".eggs"}
)  # fmt: skip


@dataclass(frozen=True)
class LoadedTarget:
    target: Target
    root: Path
    files: tuple[str, ...]  # the .py files under root, relative, "/"-separated, sorted
    config: SurfaceConfig


def open_target(
    spec: str,
    *,
    download_dir: Path,
    offline: bool = False,
    config: Path | None = None,
    packages: Collection[str] = UPSTREAM_PACKAGES,
    pip: Sequence[str] = (sys.executable, "-m", "pip"),
) -> LoadedTarget:
    """The target ``spec`` names: a source folder, a ``.whl`` file or ``NAME==VERSION``.
    ``config``: a surface configuration file to use instead of the project's own."""
    path = Path(spec).expanduser()
    if path.is_dir():
        loaded = _folder(path, packages)
    elif path.is_file() and path.suffix == ".whl":
        loaded = _wheel(path, download_dir, packages)
    elif "==" in spec and not path.exists():
        loaded = _release(parse_pin(spec), download_dir, offline, packages, pip)
    else:
        raise ConfigError(
            f"target {spec!r} is not a folder, a .whl file or NAME==VERSION; give the "
            f"project's source folder, its wheel, or its release on the package index"
        )
    if config is not None:
        loaded = _with_config(loaded, load_config(config))
    return loaded


def _with_config(loaded: LoadedTarget, config: SurfaceConfig) -> LoadedTarget:
    return LoadedTarget(loaded.target, loaded.root, _project_files(loaded.root, config), config)


@contextlib.contextmanager
def _naming_target(spec: str) -> Iterator[None]:
    """A failure to fetch the target says it was the target's: under pytest it errs every
    upstream case, and grouped by cause it would otherwise read as an upstream failure."""
    try:
        yield
    except InfrastructureError as exc:
        exc.cause = f"target {spec}: {exc.cause or exc}"
        raise


# --- wheels --------------------------------------------------------------------------


def _release(
    release: Pin,
    download_dir: Path,
    offline: bool,
    packages: Collection[str],
    pip: Sequence[str],
) -> LoadedTarget:
    """``NAME==VERSION``'s wheel, fetched by pip as a wheel only (never an sdist, never its
    dependencies) and kept under ``download_dir``; a wheel refused is not kept."""
    source = IndexSource(
        release.name,
        release.version,
        wheel_dir=download_dir,
        offline=offline,
        pip=pip,
        ignore_requires_python=True,  # read, never installed: any Python's wheel will do
    )
    with _naming_target(release.requirement):
        source.fetch([])  # keeps the wheel in download_dir (offline: raises if it is not)
    kept = source.kept_wheel
    assert kept is not None
    try:
        return _wheel(kept, download_dir, packages)
    except WheelRefused:
        KEPT_WHEELS.forget(kept)
        kept.unlink(missing_ok=True)
        raise


def _wheel(wheel: Path, download_dir: Path, packages: Collection[str]) -> LoadedTarget:
    root = unpacked(wheel, download_dir / "unpacked")
    metadata = _dist_info_metadata(root)
    if metadata is None:
        raise FetchError(f"{wheel}: no *.dist-info/METADATA in the wheel: not a wheel?")
    name, version, lines = _from_metadata(metadata)
    found = declared(lines, packages)
    target = Target(
        name or wheel.name.split("-")[0],
        version,
        found.ranges,
        metadata_requirements(metadata),
        extras=found.extras,
    )
    return LoadedTarget(target, root, _project_files(root, SurfaceConfig()), SurfaceConfig())


def _dist_info_metadata(root: Path) -> str | None:
    found = sorted(p for p in root.glob("*.dist-info/METADATA") if p.is_file())  # no FIFO
    return found[0].read_text("utf-8", "replace") if found else None


def _from_metadata(text: str) -> tuple[str | None, str | None, list[str]]:
    """Name, version and ``Requires-Dist`` lines of a ``METADATA``/``PKG-INFO``."""
    headers = HeaderParser().parsestr(text)
    return headers.get("Name"), headers.get("Version"), headers.get_all("Requires-Dist") or []


# --- requirement ranges --------------------------------------------------------------


@dataclass(frozen=True)
class Declared:
    """What a project's requirements declare on the upstream packages: each one's range
    (package -> specifier, the rules of the module docstring), and each extra's own
    (canonical extra name -> package -> specifier, its lines joined): what the code the
    project installs that extra for needs."""

    ranges: dict[str, str]
    extras: dict[str, dict[str, str]]


def declared(requirements: Iterable[str], packages: Collection[str]) -> Declared:
    """The ranges ``requirements`` declare on ``packages``, each line read once."""
    wanted = {canonicalize_name(p): p for p in packages}
    always: dict[str, list[SpecifierSet]] = {}
    extras: dict[str, list[SpecifierSet]] = {}
    each_extra: dict[str, dict[str, SpecifierSet]] = {}
    for line in requirements:
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:  # says nothing about a range: said, not dropped
            if any(p in line for p in wanted):
                print(
                    f"canary: warning: requirement {line!r} does not parse ({exc}); its "
                    f"range is not read",
                    file=sys.stderr,
                )
            continue
        package = wanted.get(canonicalize_name(requirement.name))
        if package is None:
            continue
        applies = _applies(requirement)
        if applies is None:
            continue  # for another platform, with no extra: not this install's range
        (always if applies else extras).setdefault(package, []).append(requirement.specifier)
        named = set(_EXTRA.findall(str(requirement.marker))) if not applies else set()
        if len(named) == 1:  # only through that one extra
            own = each_extra.setdefault(canonicalize_name(named.pop()), {})
            own[package] = own.get(package, SpecifierSet()) & requirement.specifier
    return Declared(_ranges(wanted.values(), always, extras), _extra_ranges(each_extra))


def _ranges(
    packages: Iterable[str],
    always: Mapping[str, list[SpecifierSet]],
    extras: Mapping[str, list[SpecifierSet]],
) -> dict[str, str]:
    """Each package's range: what always applies, joined, else the smallest range holding
    every extra's."""
    ranges = {}
    for package in packages:
        if package in always:
            joined = SpecifierSet()
            for specifier in always[package]:
                joined &= specifier
            ranges[package] = str(joined)
        elif package in extras:
            agreed = {str(specifier) for specifier in extras[package]}
            spanned = hull(extras[package])
            if len(agreed) == 1:
                ranges[package] = agreed.pop()
            elif spanned is not None:
                ranges[package] = str(spanned)
    return ranges


def _extra_ranges(
    each_extra: Mapping[str, Mapping[str, SpecifierSet]],
) -> dict[str, dict[str, str]]:
    """The extras that declare a range on some package, each with those ranges."""
    return {
        extra: {package: str(spec) for package, spec in ranges.items() if str(spec)}
        for extra, ranges in sorted(each_extra.items())
        if any(str(spec) for spec in ranges.values())
    }


_EXTRA = re.compile(r"""\bextra\s*==\s*["']([^"']+)["']""")


def _applies(requirement: Requirement) -> bool | None:
    """True: always required here; False: only through an extra; None: not on this
    platform."""
    marker = requirement.marker
    if marker is None:
        return True
    with contextlib.suppress(UndefinedEnvironmentName):
        if marker.evaluate({"extra": ""}):
            return True
    if "extra" in str(marker):
        return False
    return None


# --- source folders ------------------------------------------------------------------


class _FirstDeclared:
    """What the first source read that declares a range on upstream declares; a source is
    read only while none has (``lines`` is called only then)."""

    def __init__(self, packages: Collection[str]) -> None:
        self.packages = packages
        self.found = Declared({}, {})

    def read(self, lines: Callable[[], list[str]]) -> None:
        if not self.found.ranges:
            self.found = declared(lines(), self.packages)


def _folder(root: Path, packages: Collection[str]) -> LoadedTarget:
    config = SurfaceConfig()
    name = version = None
    first = _FirstDeclared(packages)
    read = first.read
    dependencies: dict[str, str] = {}
    if (metadata := _dist_info_metadata(root)) is not None:  # an unpacked wheel
        name, version, found = _from_metadata(metadata)
        dependencies = metadata_requirements(metadata)
        read(lambda: found)
    elif (pkg_info := root / "PKG-INFO").is_file():  # an unpacked sdist
        text = pkg_info.read_text("utf-8", "replace")
        name, version, found = _from_metadata(text)
        dependencies = metadata_requirements(text)
        read(lambda: found)
    pyproject = root / "pyproject.toml"
    setup_cfg = root / "setup.cfg"
    if pyproject.is_file():
        text = pyproject.read_text("utf-8")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{pyproject}: not valid TOML ({exc}); fix the file") from None
        table = data.get("tool", {}).get("canary", {}).get("surface")
        if table is not None:
            config = config_from_table(table, origin=str(pyproject))
        project = data.get("project", {})
        name = name or project.get("name")
        version = version or versions.version_from_pyproject(text)
        dependencies = dependencies or core_requirements(project.get("dependencies", []))
        read(lambda: _from_pyproject(project))
    if setup_cfg.is_file():
        cfg_name, found = _from_setup_cfg(setup_cfg.read_text("utf-8"))
        name = name or cfg_name
        version = version or versions.version_from_setup_cfg(setup_cfg.read_text("utf-8"))
        read(lambda: found)
    read(lambda: _from_egg_info(root))
    if (root / "setup.py").is_file() and (version is None or not first.found.ranges):
        text = (root / "setup.py").read_text("utf-8", "replace")
        version = version or versions.version_from_setup_py(text)
        read(lambda: _setup_py_requirements(text))
    target = Target(
        name or root.resolve().name,
        version,
        first.found.ranges,
        dependencies,
        extras=first.found.extras,
    )
    return LoadedTarget(target, root, _project_files(root, config), config)


def _from_pyproject(project: Mapping[str, Any]) -> list[str]:
    """The requirements of ``pyproject.toml``'s ``[project]``: its dependencies, and each
    optional-dependencies group's as the wheel's METADATA writes them."""
    lines = list(project.get("dependencies", []))
    for extra, extra_lines in project.get("optional-dependencies", {}).items():
        lines.extend(_with_extra(r, extra) for r in extra_lines)
    return lines


def _with_extra(requirement: str, extra: str) -> str:
    """A requirement of an optional-dependencies group, as the wheel's METADATA writes it."""
    base, _, marker = requirement.partition(";")
    condition = f'extra == "{extra}"'
    return (
        f"{base}; ({marker.strip()}) and {condition}" if marker.strip() else f"{base}; {condition}"
    )


def _from_setup_cfg(text: str) -> tuple[str | None, list[str]]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None, []
    lines = _lines(parser.get("options", "install_requires", fallback=""))
    if parser.has_section("options.extras_require"):
        for extra, value in parser.items("options.extras_require"):
            lines.extend(_with_extra(r, extra) for r in _lines(value))
    return parser.get("metadata", "name", fallback=None), lines


def _from_egg_info(root: Path) -> list[str]:
    """The requirements of ``*.egg-info/requires.txt`` (setuptools' format: the install
    requirements, then ``[extra]``, ``[:marker]`` or ``[extra:marker]`` sections)."""
    found = sorted(p for p in root.glob("*.egg-info/requires.txt") if p.is_file())
    if not found:
        return []
    lines, marker = [], ""
    for line in _lines(found[0].read_text("utf-8", "replace")):
        if line.startswith("[") and line.endswith("]"):
            extra, _, condition = line[1:-1].partition(":")
            parts = [f"({condition})" if condition else "", f'extra == "{extra}"' if extra else ""]
            marker = " and ".join(p for p in parts if p)
        else:
            lines.append(f"{line}; {marker}" if marker else line)
    return lines


def _setup_py_requirements(text: str) -> list[str]:
    """The requirements a ``setup.py`` spells as literals in its ``setup(...)`` call (or in
    module-level names bound to literals): ``install_requires`` and ``extras_require``. The
    file is parsed, never run; what it computes is not read."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    literals: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                with contextlib.suppress(ValueError, TypeError, SyntaxError, RecursionError):
                    literals[target.id] = ast.literal_eval(node.value)
    requirements: list[str] = []
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        for keyword in call.keywords:
            value = _literal(keyword.value, literals)
            if keyword.arg == "install_requires" and isinstance(value, (list, tuple)):
                requirements += [r for r in value if isinstance(r, str)]
            elif keyword.arg == "extras_require" and isinstance(value, dict):
                for extra, listed in value.items():
                    if isinstance(extra, str) and isinstance(listed, (list, tuple)):
                        requirements += [
                            _with_extra(r, extra) for r in listed if isinstance(r, str)
                        ]
    return requirements


def _literal(node: ast.expr | None, literals: dict[str, object]) -> object:
    """The value of a literal, or of a name bound to one; a list keeps the elements that
    are literal (``["numpy", compute()]`` -> ``["numpy"]``), a dict the items."""
    if isinstance(node, ast.Name):
        return literals.get(node.id)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [v for e in node.elts if (v := _literal(e, literals)) is not None]
    if isinstance(node, ast.Dict):
        pairs = zip(node.keys, node.values, strict=True)
        return {
            key: _literal(value, literals)
            for k, value in pairs
            if k is not None and isinstance(key := _literal(k, literals), str)
        }
    try:
        return ast.literal_eval(node) if node is not None else None
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip()]


def _project_files(root: Path, config: SurfaceConfig) -> tuple[str, ...]:
    """The ``.py`` files of the project's code under ``root``: none the configuration
    excludes, and none of its test suite (a ``tests``/``test`` folder, a ``conftest.py``:
    pytest runs them for the project, never its users; tunelabs-zoo's wheel ships 117)."""
    return tuple(f for f in _python_files(root) if not config.excludes(f) and not in_test_suite(f))


def in_test_suite(path: str) -> bool:
    """Whether ``path`` (relative, "/"-separated) lies in a project's test suite: a file of
    a ``tests`` or ``test`` folder, or a ``conftest.py`` (``train/test_utils.py`` is code)."""
    *folders, name = path.split("/")
    return name == "conftest.py" or any(folder in _TEST_FOLDERS for folder in folders)


_TEST_FOLDERS = frozenset({"tests", "test"})


def _python_files(root: Path) -> tuple[str, ...]:
    """The ``.py`` files under ``root`` that are regular files, or links to one inside
    ``root``; anything else named ``.py`` is skipped (with a warning naming it)."""
    found = []
    inside = root.resolve()
    for folder, subfolders, names in os.walk(root):  # symlinked folders are not entered
        subfolders[:] = sorted(
            d for d in subfolders if d not in _SKIPPED_FOLDERS and not d.startswith(".")
        )
        base = Path(folder).relative_to(root)
        for name in names:
            if name.endswith(".py") and _readable(Path(folder) / name, inside):
                found.append((base / name).as_posix())
    return tuple(sorted(found))


def _readable(path: Path, inside: Path) -> bool:
    """Whether ``path`` is a regular file to read: itself, or a link resolved to one inside
    the target. A FIFO would hang the read, a device never end, a loop or a dangling link
    fail it, and a link out of the target read what is not the target's."""
    try:
        if stat.S_ISREG(path.lstat().st_mode):
            return True
        if not path.is_symlink():
            why = "not a regular file (a FIFO, a socket or a device)"
        else:
            resolved = path.resolve(strict=True)
            if not resolved.is_relative_to(inside):
                why = f"a link to {resolved}, outside the target"
            elif stat.S_ISREG(resolved.stat().st_mode):
                return True
            else:
                why = f"a link to {resolved}, not a regular file"
    except FileNotFoundError:
        why = "a dangling link" if path.is_symlink() else "gone while it was listed"
    except (OSError, RuntimeError) as exc:  # ELOOP: RuntimeError before Python 3.13
        why = f"a link that cannot be resolved ({exc.__class__.__name__}: a loop?)"
    print(f"canary: warning: skipped {path}: {why}", file=sys.stderr)
    return False
