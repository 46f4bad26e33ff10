"""Reading a package's version from its files, without importing it.

Used for trees whose version nobody stated: ``main`` (or a commit) on GitHub and
``--canary-local`` trees. The order follows how the packages themselves define it, per
release range (checked in their repositories):

- a literal ``__version__`` in ``<package>/__init__.py``: transformers, peft, and trl
  before 0.22;
- a ``VERSION`` file inside the package folder;
- (local trees only) the installed ``*.dist-info/METADATA``;
- the repository's packaging files: a literal version in ``pyproject.toml``, ``setup.py``
  or ``setup.cfg``, or the file they point at. trl 0.22 and 0.23 have ``version = file:
  VERSION`` in setup.cfg, trl 0.24 and later ``dynamic = ["version"]`` with
  ``[tool.setuptools.dynamic] version = { file = "VERSION" }``: ``VERSION`` at the
  repository root, and an ``__init__.py`` that asks the installed metadata.

Paths are in a source's installed layout (``trl/__init__.py``), except those made by
:func:`repo_path`: ``repo:pyproject.toml`` is relative to the repository root, which is
not the package's parent where the package sits under ``src/``.
"""

from __future__ import annotations

import ast
import configparser
import re
import sys
from collections.abc import Callable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


REPO_PREFIX = "repo:"
_PYPROJECT, _SETUP_PY, _SETUP_CFG = "pyproject.toml", "setup.py", "setup.cfg"
# The file trl's packaging points at; read with the packaging files so a tree's version
# costs one batch of requests, not two.
_USUAL_VERSION_FILE = "VERSION"

Read = Callable[[str], bytes | None]


def repo_path(relative: str) -> str:
    """The source path of a file at the repository root (``repo:pyproject.toml``)."""
    return f"{REPO_PREFIX}{relative}"


def repo_relative(path: str) -> str | None:
    """The repository-relative part of a :func:`repo_path`; None for an installed path."""
    return path[len(REPO_PREFIX) :] if path.startswith(REPO_PREFIX) else None


def package_version_files(package: str) -> list[str]:
    return [f"{package}/__init__.py", f"{package}/VERSION"]


def version_files(package: str) -> list[str]:
    """Every file :func:`declared_version` may read, to fetch in one batch beforehand."""
    names = (_PYPROJECT, _SETUP_PY, _SETUP_CFG, _USUAL_VERSION_FILE)
    return [*package_version_files(package), *(repo_path(name) for name in names)]


def declared_version(package: str, read: Read) -> str | None:
    """The version a source tree declares (installed or repository layout), or None."""
    return version_from_package_files(package, read) or version_from_repository(read)


def version_from_repository(read: Read) -> str | None:
    """The version the repository's packaging files declare, or the file they point at."""
    if (pyproject := _text(read(repo_path(_PYPROJECT)))) is not None:
        if version := version_from_pyproject(pyproject):
            return version
        if (pointed := pyproject_version_file(pyproject)) and (
            version := _version_file(read, pointed)
        ):
            return version
    if (setup_py := _text(read(repo_path(_SETUP_PY)))) is not None and (
        version := version_from_setup_py(setup_py)
    ):
        return version
    if (setup_cfg := _text(read(repo_path(_SETUP_CFG)))) is not None:
        if version := version_from_setup_cfg(setup_cfg):
            return version
        if (pointed := setup_cfg_version_file(setup_cfg)) and (
            version := _version_file(read, pointed)
        ):
            return version
    return None


def pyproject_version_file(text: str) -> str | None:
    """``[tool.setuptools.dynamic] version = { file = "VERSION" }`` of a dynamic version."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    if "version" not in data.get("project", {}).get("dynamic", []):
        return None
    spec = data.get("tool", {}).get("setuptools", {}).get("dynamic", {}).get("version")
    file = spec.get("file") if isinstance(spec, dict) else None
    if isinstance(file, list):  # setuptools joins several files; the version is in the first
        file = file[0] if file else None
    return file if isinstance(file, str) else None


def setup_cfg_version_file(text: str) -> str | None:
    """``version = file: VERSION`` in setup.cfg's ``[metadata]``."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    value = parser.get("metadata", "version", fallback="").strip()
    if not value.startswith("file:"):
        return None
    return value.removeprefix("file:").split(",")[0].strip() or None


def _version_file(read: Read, relative: str) -> str | None:
    parts = relative.replace("\\", "/").split("/")
    if relative.startswith("/") or ".." in parts:
        return None  # packaging pointing outside the repository: not ours to follow
    return _first_line(read(repo_path("/".join(p for p in parts if p not in ("", ".")))))


def _text(content: bytes | None) -> str | None:
    return None if content is None else content.decode("utf-8", "replace")


def _first_line(content: bytes | None) -> str | None:
    text = (_text(content) or "").strip()
    return text.splitlines()[0].strip() if text else None


def version_from_package_files(package: str, read: Read) -> str | None:
    """The version declared inside the package folder, or None."""
    init = read(f"{package}/__init__.py")
    if init is not None and (version := literal_dunder_version(init)):
        return version
    return _first_line(read(f"{package}/VERSION"))


def literal_dunder_version(source: bytes) -> str | None:
    """``__version__ = "5.6.0.dev0"`` at module level, or None when it is computed."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        value = getattr(node, "value", None)
        if any(isinstance(t, ast.Name) and t.id == "__version__" for t in targets) and (
            isinstance(value, ast.Constant) and isinstance(value.value, str)
        ):
            return value.value
    return None


def version_from_metadata(text: str) -> str | None:
    match = re.search(r"^Version:\s*(\S+)\s*$", text, re.MULTILINE)
    return match.group(1) if match else None


def version_from_pyproject(text: str) -> str | None:
    try:
        version = tomllib.loads(text).get("project", {}).get("version")
    except tomllib.TOMLDecodeError:
        return None
    return version if isinstance(version, str) else None


def version_from_setup_py(source: str) -> str | None:
    """The literal ``version=`` keyword of the ``setup(...)`` call."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        callee = getattr(node, "func", None)
        name = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", None)
        if isinstance(node, ast.Call) and name == "setup":
            for keyword in node.keywords:
                if (
                    keyword.arg == "version"
                    and isinstance(keyword.value, ast.Constant)
                    and isinstance(keyword.value.value, str)
                ):
                    return keyword.value.value
    return None


def version_from_setup_cfg(text: str) -> str | None:
    match = re.search(r"^\[metadata\][^\[]*?^version\s*=\s*(\S+)", text, re.MULTILINE | re.DOTALL)
    if not match or match.group(1).endswith(":"):  # `attr:` / `file:` point elsewhere
        return None
    return match.group(1)
