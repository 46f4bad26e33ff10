"""Names a package binds to an instance of a class (``PIPELINE_REGISTRY =
PipelineRegistry(...)``, ``TOKENIZER_MAPPING = _LazyAutoMapping(...)``): the call they hold;
or to a literal (``__version__ = "4.46.1"``), whose attributes are its builtin type's.

The proof: after the module ran, such a name holds what its last binding, one plain
``name = C(...)`` outside any ``if``, returned; ``C(...)`` returns an instance of ``C``
(unless ``C`` or a base defines ``__new__``, which the caller checks), and nothing sets
attributes on it but ``C``'s own methods. It would be false if the module bound the name
otherwise too (a ``def``, an import, a function's ``global``) or set attributes on it
(``name.x = ...``, ``setattr(name, ...)``): then no call is returned.
"""

from __future__ import annotations

import ast

from canary.codeindex import NOT_LITERAL, Effect, Module

_SETTERS = frozenset({"setattr", "object.__setattr__"})


def constructor(module: Module, name: str) -> str | None:
    """The callee of the call ``name`` holds after ``module`` ran ("PipelineRegistry"),
    where the module binds it exactly once so; None for anything else."""
    assignment = module.assignments.get(name)
    if assignment is None or assignment.op is not None or assignment.guards:
        return None
    if _bound_otherwise(module, name) or any(
        sets_attributes(effect, name) for effect in module.effects
    ):
        return None
    return callee(assignment.value)


# The builtin types a literal may hold whose attributes are the same on Python 3.10 to
# 3.13 (int gained is_integer in 3.12): an instance has exactly the type's, none of its own.
# Not None: a placeholder another module or a subclass replaces (``config_class = None``).
LITERAL_TYPES = (str, bytes, tuple, list, dict, set, frozenset)


def literal(module: Module, name: str) -> object:
    """The literal ``name`` holds after ``module`` ran, where its last binding is one plain
    ``name = <literal>`` outside any ``if`` and the module binds it no other way (a later
    ``name[k] = v`` or ``name.append(v)`` changes what it holds, not its type); else
    NOT_LITERAL."""
    assignment = module.assignments.get(name)
    if assignment is None or assignment.op is not None or assignment.guards:
        return NOT_LITERAL
    if _bound_otherwise(module, name):
        return NOT_LITERAL
    return assignment.literal


def literal_attribute(value: object, name: str) -> bool | None:
    """Whether a literal ``value`` has attribute ``name``: its type's (True), not there
    (False), or None (not a type of :data:`LITERAL_TYPES`, or a dunder it lacks, which a
    later Python may add)."""
    if not isinstance(value, LITERAL_TYPES):
        return None
    if hasattr(type(value), name):
        return True
    return None if name.startswith("__") else False


def _bound_otherwise(module: Module, name: str) -> bool:
    return (
        name in module.classes
        or name in module.functions
        or name in module.imports
        or name in module.run_time_globals
    )


def callee(value: str) -> str | None:
    """``C(...)`` or ``m.C(...)`` -> "C" or "m.C"; None for any other expression."""
    call = _call(value)
    if call is None:
        return None
    func = call.func
    while isinstance(func, ast.Attribute):
        func = func.value
    return ast.unparse(call.func) if isinstance(func, ast.Name) else None


def sets_attributes(effect: Effect, name: str) -> bool:
    """A module statement that may give ``name``'s object attributes its class does not:
    an assignment to one of its attributes or items, a write to its ``__dict__``, or a
    ``setattr`` on it."""
    if effect.root == name and effect.target != name:
        return effect.op != "call" or "__dict__" in effect.target or "__setattr__" in effect.target
    if effect.op != "call" or effect.target not in _SETTERS:
        return False
    call = _call(effect.value)
    first = call.args[0] if call is not None and call.args else None
    return not isinstance(first, ast.Name) or first.id == name


def _call(text: str) -> ast.Call | None:
    """The call ``text`` is, parsed; None for any other expression, or none."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    return node if isinstance(node, ast.Call) else None


__all__ = [
    "LITERAL_TYPES",
    "callee",
    "constructor",
    "literal",
    "literal_attribute",
    "sets_attributes",
]
