"""Modules and classes as a check sees them: a class's ``method(name)`` is the method Python
would find through its static MRO (its own, or one a base or mixin of the package binds),
because a fix patches and calls what the class runs, wherever the code lives.

``own_method(name)`` keeps the class's own body only, for a check whose fix reads the class's
own ``__dict__``. Views, made per snapshot: the cached code index is never changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from canary.codeindex import Class, Function, Module

# (class qualname, member name) -> the method the static MRO resolves it to, or Drift
Resolve = Callable[[str, str], Function]
V = TypeVar("V", "InheritingClass", "InheritingModule")


def _view(kind: type[V], found: Class | Module, resolve: Resolve) -> V:
    """``found``'s fields in a ``kind`` (its subclass) that resolves through ``resolve``."""
    view = object.__new__(kind)
    view.__setstate__(found.__getstate__())  # type: ignore[attr-defined]
    object.__setattr__(view, "_resolve", resolve)
    return view


class InheritingClass(Class):
    """A :class:`~canary.codeindex.Class` whose :meth:`method` follows the static MRO."""

    __slots__ = ("_resolve",)

    @classmethod
    def of(cls, found: Class, resolve: Resolve) -> InheritingClass:
        return _view(cls, found, resolve)

    def method(self, name: str) -> Function:
        """The method ``name`` this class resolves to: its own, else inherited through the
        static MRO; Drift when no class of the package binds it as a method."""
        if name in self.methods:
            return self.methods[name]
        return self._resolve(self.qualname, name)

    def own_method(self, name: str) -> Function:
        """The method ``name`` of this class's own body; Drift when only a base has it."""
        return Class.method(self, name)


class InheritingModule(Module):
    """A :class:`~canary.codeindex.Module` whose classes are :class:`InheritingClass`."""

    __slots__ = ("_resolve",)

    @classmethod
    def of(cls, found: Module, resolve: Resolve) -> InheritingModule:
        return _view(cls, found, resolve)

    def cls(self, name: str) -> InheritingClass:
        return InheritingClass.of(Module.cls(self, name), self._resolve)
