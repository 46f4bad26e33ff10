"""Names a package binds to an instance of a class (``PIPELINE_REGISTRY =
PipelineRegistry(...)``, ``TOKENIZER_MAPPING = _LazyAutoMapping(...)``): the call they hold.

The proof: after the module ran, such a name holds what its last binding, one plain
``name = C(...)`` outside any ``if``, returned; ``C(...)`` returns an instance of ``C``
(unless ``C`` or a base defines ``__new__``, which the caller checks), and nothing sets
attributes on it but ``C``'s own methods. It would be false if the module bound the name
otherwise too (a ``def``, an import, a function's ``global``) or set attributes on it
(``name.x = ...``, ``setattr(name, ...)``): then no call is returned.
"""

from __future__ import annotations

import ast

from canary.codeindex import Effect, Module

_SETTERS = frozenset({"setattr", "object.__setattr__"})


def constructor(module: Module, name: str) -> str | None:
    """The callee of the call ``name`` holds after ``module`` ran ("PipelineRegistry"),
    where the module binds it exactly once so; None for anything else."""
    assignment = module.assignments.get(name)
    if assignment is None or assignment.op is not None or assignment.guards:
        return None
    bound_otherwise = (
        name in module.classes
        or name in module.functions
        or name in module.imports
        or name in module.run_time_globals
    )
    if bound_otherwise or any(sets_attributes(effect, name) for effect in module.effects):
        return None
    return callee(assignment.value)


def callee(value: str) -> str | None:
    """``C(...)`` or ``m.C(...)`` -> "C" or "m.C"; None for any other expression."""
    try:
        node = ast.parse(value, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    while isinstance(func, ast.Attribute):
        func = func.value
    return ast.unparse(node.func) if isinstance(func, ast.Name) else None


def sets_attributes(effect: Effect, name: str) -> bool:
    """A module statement that may give ``name``'s object attributes its class does not:
    an assignment to one of its attributes or items, a write to its ``__dict__``, or a
    ``setattr`` on it."""
    if effect.root == name and effect.target != name:
        return effect.op != "call" or "__dict__" in effect.target or "__setattr__" in effect.target
    if effect.op != "call" or effect.target not in _SETTERS:
        return False
    try:
        call = ast.parse(effect.value, mode="eval").body
    except SyntaxError:
        return True
    first = call.args[0] if isinstance(call, ast.Call) and call.args else None
    return not isinstance(first, ast.Name) or first.id == name


__all__ = ["callee", "constructor", "sets_attributes"]
