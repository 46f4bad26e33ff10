"""Small package trees for the canary.symbols tests, parsed from strings in memory."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from canary.codeindex import Module, parse_module
from canary.symbols import PackageTree
from canary.symbols.alltext import TextAll, read_all_of


def package(
    name: str,
    files: dict[str, str],
    *,
    listed: bool = False,
    texts_read: list[str] | None = None,
    loaded: list[str] | None = None,
) -> PackageTree:
    """A PackageTree over ``files`` (path -> source, dedented); ``listed``: with a lister
    of its folders, a reader of files' ``__all__`` off their text and of their text, as a
    caller that can list the tree gives; ``texts_read`` records each path that reader is
    asked for, ``loaded`` each path parsed."""
    sources = {path: textwrap.dedent(text) for path, text in files.items()}

    def load(path: str) -> Module | None:
        if loaded is not None:
            loaded.append(path)
        if path not in sources:
            return None
        return parse_module(sources[path], path=path, origin="test")

    def listdir(folder: str) -> list[str] | None:
        prefix = folder + "/"
        entries = {p[len(prefix) :].split("/")[0] for p in sources if p.startswith(prefix)}
        return sorted(entries) or None

    def read_all(paths: Sequence[str]) -> dict[str, TextAll]:
        if texts_read is not None:
            texts_read.extend(paths)
        return read_all_of({p: sources[p].encode() if p in sources else None for p in paths})

    return PackageTree(
        name,
        load,
        listdir=listdir if listed else None,
        read_all=read_all if listed else None,
        read_text=sources.get if listed else None,
    )
