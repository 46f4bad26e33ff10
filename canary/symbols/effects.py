"""Containers a module builds in steps at import time, evaluated from its effects.

``__all__ = [...]`` then ``__all__ += [...]``; ``_import_structure = {...}`` then
``_import_structure["x"] = [...]`` and ``_import_structure["y"].extend([...])`` under
``try/else``. Only literal steps are evaluated; a step this module cannot evaluate makes
the result incomplete (its text is kept, so a caller can say why it cannot decide) unless
the caller recognises it (``known``). Steps inside ``except`` handlers are left out: they
are the fallback for a missing optional dependency (transformers' dummy objects), and
what they list is the same names, as placeholders.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from dataclasses import dataclass

from canary.codeindex import NOT_LITERAL, Effect, Module

_MUTATORS = frozenset({"extend", "append", "update", "setdefault", "add"})


@dataclass(frozen=True)
class Built:
    """A container's value after every step evaluated; ``unevaluated`` lists the steps that
    were not (their source text), so an empty tuple means the value is exact."""

    value: object
    unevaluated: tuple[str, ...] = ()


def steps(module: Module, name: str) -> tuple[Effect, ...]:
    """The effects that build ``name``, in source order, handlers left out."""
    return tuple(e for e in module.effects if e.root == name and not e.fallback)


def build(
    module: Module, name: str, known: Callable[[Effect], bool] = lambda e: False
) -> Built | None:
    """``name``'s value once the module has run, or None when the module never binds it."""
    found = steps(module, name)
    if not found:
        assignment = module.assignments.get(name)
        if assignment is None:
            return None
        if assignment.literal is NOT_LITERAL:
            return Built(None, (f"{name} = {assignment.value}",))
        return Built(_mutable(assignment.literal))
    value: object = None
    unevaluated: list[str] = []
    for effect in found:
        if known(effect):
            continue
        try:
            value = _apply(value, effect, name)
        except _NotEvaluated:
            unevaluated.append(effect_text(effect))
    return Built(value, tuple(unevaluated))


def declared_all(module: Module) -> Built | None:
    """The module's ``__all__`` as a tuple of names, or None when it has none."""
    built = build(module, "__all__")
    if built is None:
        return None
    names = built.value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return Built((), (*built.unevaluated, "__all__ is not a list of strings"))
    return Built(tuple(names), built.unevaluated)


class _NotEvaluated(Exception):
    pass


def _apply(value: object, effect: Effect, name: str) -> object:
    if effect.op == "call":
        call = _expression(effect.value)
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            raise _NotEvaluated
        if call.func.attr not in _MUTATORS or call.keywords:
            raise _NotEvaluated
        container, holder, key = _locate(value, call.func.value, name)
        args = [_literal(a) for a in call.args]
        _mutate(container, call.func.attr, args)
        if holder is not None:
            holder[key] = container
        return value
    target = _expression(effect.target)
    new = _literal(_expression(effect.value))
    if isinstance(target, ast.Name):
        if effect.op == "=":
            return _mutable(new)
        if effect.op == "+" and isinstance(value, list) and isinstance(new, list):
            return value + new
        raise _NotEvaluated
    if isinstance(target, ast.Subscript):
        container, _, _ = _locate(value, target.value, name)
        key = _literal(target.slice)
        if not isinstance(container, dict):
            raise _NotEvaluated
        if effect.op == "=":
            container[key] = _mutable(new)
        elif effect.op == "+" and isinstance(container.get(key), list):
            container[key] = container[key] + list(new)
        else:
            raise _NotEvaluated
        return value
    raise _NotEvaluated


def _locate(value: object, node: ast.expr, name: str) -> tuple[object, dict | None, object]:
    """The container ``node`` denotes (``name`` or ``name[key]``), the dict holding it
    and its key."""
    if isinstance(node, ast.Name) and node.id == name:
        return value, None, None
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == name
        and isinstance(value, dict)
    ):
        key = _literal(node.slice)
        if key in value:
            return value[key], value, key
    raise _NotEvaluated


def _mutate(container: object, method: str, args: list) -> None:
    if isinstance(container, list) and method == "extend" and len(args) == 1:
        container.extend(args[0])
    elif isinstance(container, list) and method == "append" and len(args) == 1:
        container.append(args[0])
    elif isinstance(container, dict) and method == "update" and len(args) == 1:
        container.update(_mutable(args[0]))
    elif isinstance(container, dict) and method == "setdefault" and args:
        container.setdefault(args[0], _mutable(args[1]) if len(args) > 1 else None)
    elif isinstance(container, set) and method == "add" and len(args) == 1:
        container.add(args[0])
    else:
        raise _NotEvaluated


def _expression(text: str) -> ast.expr:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        raise _NotEvaluated from None


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _NotEvaluated from None


def _mutable(value: object) -> object:
    # Tuples become lists so later ``extend`` steps apply; copies keep the index intact.
    if isinstance(value, tuple):
        return [_mutable(v) for v in value]
    return copy.deepcopy(value)


def effect_text(effect: Effect) -> str:
    """The step as it reads in the source (normalised)."""
    if effect.op == "call":
        return effect.value
    op = "=" if effect.op == "=" else f"{effect.op}="
    return f"{effect.target} {op} {effect.value}"
