"""Reading a package's version from its files, without importing it.

Used for trees whose version nobody stated: ``main`` on GitHub and ``--canary-local``
trees. The order follows how the packages themselves define it: a literal
``__version__`` in ``__init__.py`` (transformers, peft), a ``VERSION`` file beside it
(trl 0.22 and later read it at import), then the installed ``*.dist-info/METADATA``,
then the repository's packaging files.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def package_version_files(package: str) -> list[str]:
    return [f"{package}/__init__.py", f"{package}/VERSION"]


def version_from_package_files(package: str, read: Callable[[str], bytes | None]) -> str | None:
    """The version declared inside the package folder, or None."""
    init = read(f"{package}/__init__.py")
    if init is not None and (version := literal_dunder_version(init)):
        return version
    version_file = read(f"{package}/VERSION")
    if version_file is not None and (text := version_file.decode("utf-8", "replace").strip()):
        return text.splitlines()[0].strip()
    return None


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
