"""What a function, method or property object of a package provides as attributes:
Python's fixed tables, and what ``functools.lru_cache``/``cache`` add (``cache_clear``).

The proof of a miss: a function with no decorators (or only ``lru_cache``, ``cache``,
``staticmethod``, ``classmethod``) is the object ``def`` made (or that wrapper of it), whose
attributes are Python's and those set on it; a name neither lists, that no statement of its
module sets (``f.x = ...``, ``setattr(f, ...)``), is not there. Any other decorator may
return anything: unknown. A dunder name outside the table is unknown too (Python versions
add them: ``__type_params__``), except ``__wrapped__``, which only a wrapper has.
"""

from __future__ import annotations

from enum import Enum

from canary.codeindex import Function, Module
from canary.symbols.instances import sets_attributes

# What every function object has on Python 3.10 to 3.13 (dir() of a plain function).
FUNCTION_ATTRIBUTES = frozenset(
    {
        "__annotations__", "__builtins__", "__call__", "__closure__", "__code__",
        "__defaults__", "__dict__", "__doc__", "__get__", "__globals__", "__kwdefaults__",
        "__module__", "__name__", "__qualname__", "__class__", "__repr__", "__hash__",
        "__eq__", "__ne__", "__str__", "__reduce__", "__reduce_ex__", "__sizeof__",
        "__getattribute__", "__setattr__", "__delattr__", "__dir__", "__format__",
        "__init__", "__new__", "__init_subclass__", "__subclasshook__",
    }
)  # fmt: skip
# What functools.lru_cache's and cache's wrapper adds (3.10 to 3.13).
CACHE_ATTRIBUTES = frozenset(
    {"cache_clear", "cache_info", "cache_parameters", "__wrapped__", "__copy__", "__deepcopy__"}
)
BOUND_METHOD_ATTRIBUTES = frozenset({"__func__", "__self__"})
PROPERTY_ATTRIBUTES = frozenset(
    {
        "fget", "fset", "fdel", "getter", "setter", "deleter", "__doc__",
        "__isabstractmethod__", "__get__", "__set__", "__delete__", "__set_name__",
        "__class__", "__init__", "__new__", "__getattribute__",
    }
)  # fmt: skip

_CACHES = frozenset({"lru_cache", "functools.lru_cache", "cache", "functools.cache"})
_BINDERS = frozenset({"staticmethod", "classmethod"})


class Wrapper(Enum):
    """What a ``def`` with its decorators makes, where that is known."""

    FUNCTION = "function"  # the plain function
    CACHED = "functools cache wrapper"  # around the function
    CLASSMETHOD = "bound class method"  # a classmethod read through its class


def wrapper(function: Function) -> Wrapper | None:
    """What ``function``'s decorators make of it; None where one may return anything."""
    names = [d.split("(", 1)[0] for d in function.decorators]
    if any(n not in _CACHES | _BINDERS for n in names):
        return None
    if any(n in _CACHES for n in names):
        return Wrapper.CACHED if "classmethod" not in names else None
    return Wrapper.CLASSMETHOD if "classmethod" in names else Wrapper.FUNCTION


def function_attribute(made: Wrapper, name: str, *, method: bool) -> bool | None:
    """Whether the object ``made`` has attribute ``name``: True, False, or None (Python
    may add it; a plain method read through an instance is a bound method)."""
    if name in FUNCTION_ATTRIBUTES:
        return True
    if made is Wrapper.CACHED and name in CACHE_ATTRIBUTES:
        return True
    if name in BOUND_METHOD_ATTRIBUTES:
        if made is Wrapper.CLASSMETHOD:
            return True
        return None if method and made is Wrapper.FUNCTION else False
    if name.startswith("__") and name != "__wrapped__":
        return None
    return False


def property_attribute(function: Function, name: str) -> bool | None:
    """Whether the property ``function`` defines (decorated ``@property``, and its own
    ``.setter``/``.getter``/``.deleter`` at most) has attribute ``name`` read through its
    class."""
    accessors = {f"{function.name}.{a}" for a in ("setter", "getter", "deleter")}
    if "property" not in function.decorators or not accessors.issuperset(
        d for d in function.decorators if d != "property"
    ):
        return None
    if name in PROPERTY_ATTRIBUTES:
        return True
    return None if name.startswith("__") else False


def set_on(module: Module, dotted: str) -> bool:
    """Whether a statement of ``module`` sets attributes on what ``dotted`` (a name or
    ``Class.method``) names there."""
    root, _, rest = dotted.partition(".")
    if not rest:
        return any(sets_attributes(effect, root) for effect in module.effects)
    return any(e.target.startswith(f"{dotted}.") for e in module.effects)


__all__ = [
    "Wrapper",
    "function_attribute",
    "property_attribute",
    "set_on",
    "wrapper",
]
