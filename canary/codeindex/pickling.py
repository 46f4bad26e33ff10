"""How the code index's records pickle: as ``dataclasses`` pickles a frozen slotted
dataclass (the list of its field values, so a blob is byte for byte what it was), without
looking the fields up again for every object.

A warm run unpickles hundreds of thousands of these records, and a cold one pickles them
in the parse processes and unpickles them in the main one: ``dataclasses``' own
``__setstate__`` calls ``fields()`` per object, about half of the unpickling time.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T", bound=type)


def by_fields(cls: T) -> T:
    """Give the frozen slotted dataclass ``cls`` a ``__getstate__``/``__setstate__`` with
    its field names computed once (apply above ``@dataclass``)."""
    names = tuple(field.name for field in dataclasses.fields(cls))
    # A slot's own descriptor sets it past the frozen class's __setattr__; a state of
    # another length is a pickle from another canary: an error (the store parses again).
    setters = tuple(vars(cls)[name].__set__ for name in names)

    def get_state(self: Any) -> list[Any]:
        return [getattr(self, name) for name in names]

    def set_state(self: Any, state: list[Any]) -> None:
        for set_slot, value in zip(setters, state, strict=True):
            set_slot(self, value)

    cls.__getstate__ = get_state  # type: ignore[attr-defined]
    cls.__setstate__ = set_state  # type: ignore[attr-defined]
    return cls
