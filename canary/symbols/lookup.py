"""What a lookup found: a :class:`Lookup`, found, missing, or unknown.

``found`` is three-valued on purpose: ``None`` means the question cannot be decided by
reading the source (a base class outside the package, a module ``__getattr__``, a name
bound only for type checkers, a lazy structure built by code we do not evaluate), and a
consumer must never report it as missing: a false "missing" is a false alarm.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from canary.codeindex import Class, Function

# What was found (``kind`` of a found Lookup).
MODULE = "module"
CLASS = "class"
FUNCTION = "function"
ASSIGNMENT = "assignment"
METHOD = "method"
PROPERTY = "property"
CLASS_ATTRIBUTE = "class_attribute"
FIELD = "field"  # an annotation-only class attribute of a dataclass-like class
INSTANCE_ATTRIBUTE = "instance_attribute"  # ``self.x = ...`` in a method of the class or a base
NESTED_CLASS = "nested_class"
EXTERNAL = "external"  # bound to something outside the package (``why`` names it)
SERVED = "served"  # by a module __getattr__ that names it, where no import says more
# A member of a well-known base outside the package (``object``, ``nn.Module``).
INHERITED = "inherited"

# What was looked for (``kind`` of a missing or unknown Lookup).
NAME = "name"  # a module-level name
RUN_TIME_GLOBAL = "run_time_global"  # bound by a function that declares it ``global``
MEMBER = "member"  # a class member


@dataclass(frozen=True)
class Lookup:
    """The answer to "is this dotted name there?".

    ``path`` and ``qualname`` locate what was found (``qualname`` "" for a module), or, for
    a miss, the module or class where the search ended. ``why`` says, for a miss, what is
    there instead (closest names); for an unknown, why it cannot be decided; for a found
    external binding, the dotted name it is bound to. ``function``/``cls`` carry the
    definition when the lookup found one (surface anchors read ``Function.source``).
    """

    found: bool | None
    kind: str
    path: str | None = None
    qualname: str | None = None
    why: str = ""
    function: Function | None = None
    cls: Class | None = None

    @property
    def missing(self) -> bool:
        return self.found is False

    @property
    def unknown(self) -> bool:
        return self.found is None


def member_miss(name: str, chain: str, rest: str = "") -> str:
    """Why a class member is missing: no class along its MRO (``chain``) declares it;
    ``rest`` adds what the bases outside provide and the closest names."""
    return f"no {name!r} along {chain}{rest}"


def is_member_miss(why: str) -> bool:
    """Whether ``why`` is :func:`member_miss`'s: the owner was a class."""
    return why.startswith("no '") and "' along " in why


def missing(kind: str, path: str | None, qualname: str | None, why: str) -> Lookup:
    return Lookup(False, kind, path, qualname, why)


def unknown(kind: str, path: str | None, qualname: str | None, why: str) -> Lookup:
    return Lookup(None, kind, path, qualname, why)


def closest(name: str, names: Iterable[str], *, listed: int = 5) -> str:
    """The names most like ``name``, for a miss's ``why``: "closest: a, b" or ""."""
    close = difflib.get_close_matches(name, sorted(set(names)), n=listed, cutoff=0.6)
    return f"; closest: {', '.join(close)}" if close else ""
