"""The cyclic garbage collector paused for a block that makes many objects and no garbage
cycles worth collecting there (parsing, unpickling, walking one file's syntax tree)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def no_collections() -> Iterator[None]:
    """The cyclic collector off for the block: the collections tens of thousands of new
    containers would set off find nothing, and their cost grows with everything alive
    (walking a 64k-definition module took 2.6x as long per definition as a 1k one with it
    on). Whichever block started with the collector on turns it back on, so threads
    overlapping here leave it on."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
