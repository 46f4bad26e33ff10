"""Small package trees for the canary.symbols tests, parsed from strings in memory."""

from __future__ import annotations

import textwrap

from canary.codeindex import Module, parse_module
from canary.symbols import PackageTree


def package(name: str, files: dict[str, str], **options) -> PackageTree:
    """A PackageTree over ``files`` (path -> source, dedented); every load is counted."""
    sources = {path: textwrap.dedent(text) for path, text in files.items()}

    def load(path: str) -> Module | None:
        if path not in sources:
            return None
        return parse_module(sources[path], path=path, origin="test")

    return PackageTree(name, load, **options)
