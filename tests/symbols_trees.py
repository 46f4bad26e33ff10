"""Small package trees for the canary.symbols tests, parsed from strings in memory."""

from __future__ import annotations

import textwrap

from canary.codeindex import Module, parse_module
from canary.symbols import PackageTree


def package(name: str, files: dict[str, str], *, listed: bool = False) -> PackageTree:
    """A PackageTree over ``files`` (path -> source, dedented); ``listed``: with a lister
    of its folders, as a caller that can list the tree gives."""
    sources = {path: textwrap.dedent(text) for path, text in files.items()}

    def load(path: str) -> Module | None:
        if path not in sources:
            return None
        return parse_module(sources[path], path=path, origin="test")

    def listdir(folder: str) -> list[str] | None:
        prefix = folder + "/"
        entries = {p[len(prefix) :].split("/")[0] for p in sources if p.startswith(prefix)}
        return sorted(entries) or None

    return PackageTree(name, load, listdir=listdir if listed else None)
