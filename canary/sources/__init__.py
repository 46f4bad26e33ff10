"""Where upstream text comes from.

A source reads files of one package at one ref (a released version or a git ref).
Paths are always in the *installed* layout, relative to site-packages:
``transformers/trainer.py``, ``trl/trainer/sft_trainer.py``. A source maps them to its
own layout (``src/transformers/...`` in the transformers repository).

Sources know nothing about checks or about the cache: :mod:`canary.workspace` puts the
cache in front of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Source(Protocol):
    """Reads files of one package at one ref."""

    package: str
    ref: str

    @property
    def description(self) -> str:
        """Human words for error messages: ``transformers 5.5.4 from the package index``."""
        ...

    def fetch(self, paths: Sequence[str]) -> dict[str, bytes | None]:
        """Return each path's bytes, or ``None`` where the file does not exist at this ref.

        Raises :class:`canary.errors.RefNotFound` when the ref itself does not exist and
        :class:`canary.errors.FetchError` when the answer could not be had. Never returns
        ``None`` for a file it merely failed to fetch.
        """
        ...


def folder_entries(names: Iterable[str], folder: str) -> list[str] | None:
    """The entries directly inside ``folder`` ("transformers/models") among the file paths
    ``names`` ("transformers/models/llama/__init__.py" gives "llama"); None when none lies
    there. What a source that can list its tree answers to ``listdir``."""
    return folder_index(names).get(folder.rstrip("/"))


def folder_index(names: Iterable[str]) -> dict[str, list[str]]:
    """Every folder among the file paths ``names`` -> its entries, sorted (what
    :func:`folder_entries` answers for each): built once, a listing is a dict lookup."""
    entries: dict[str, set[str]] = {}
    for name in names:
        parts = name.split("/")
        for depth in range(1, len(parts)):
            entries.setdefault("/".join(parts[:depth]), set()).add(parts[depth])
    for found in entries.values():
        found.discard("")
    return {folder: sorted(found) for folder, found in entries.items() if found}
