"""What expressions are: the bindings names and attribute chains resolve to, and the values
(literals, upstream source texts, a helper's parameters) the walk follows anchors through."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from canary.surface import guards
from canary.surface.extract import syntax
from canary.surface.extract.domains import NOTHING_KNOWN
from canary.surface.extract.scopes import (
    UNBOUND,
    Alternative,
    Binding,
    Bound,
    ProjectFunction,
    ProjectModule,
    Stdlib,
    Upstream,
)
from canary.surface.extract.state import WalkState
from canary.surface.texts import (
    Literals,
    Param,
    Pattern,
    Text,
    Value,
    concatenate,
    dict_view,
    fstring_parts,
    inline_flags,
    union,
)

# Attributes Python gives every module, class or function: a chain through them has left
# upstream's API (its name, its code object, the function it wraps).
RUNTIME_ATTRIBUTES = frozenset(
    {
        "__name__",
        "__qualname__",
        "__module__",
        "__doc__",
        "__dict__",
        "__class__",
        "__code__",
        "__globals__",
        "__wrapped__",
        "__defaults__",
        "__kwdefaults__",
        "__annotations__",
        "__mro__",
        "__bases__",
        "__subclasses__",
        "__func__",
        "__self__",
        "__file__",
        "__path__",
        "__spec__",
        "__loader__",
        "__closure__",
    }
)


_BUILTINS = frozenset(dir(builtins))


# Builtins that make a container of their argument's items: a constant spelled
# frozenset({...}) holds what the display does.
_CONTAINERS = ("frozenset", "set", "tuple", "list")


# str methods that return the text (still upstream's, with the project's edits).
_TEXT_METHODS = frozenset({"replace", "strip", "lstrip", "rstrip", "expandtabs"})


NOT_LITERAL = object()


class Values(WalkState):
    """Names and attribute chains resolved to bindings, expressions evaluated to values."""

    def skip(self, why: str, node: ast.AST) -> None:
        """Count something seen and deliberately not made a reference."""
        if self.emit:
            self.project.skipped.add((why, self.path, getattr(node, "lineno", 0)))

    def bind(self, name: str, binding: Binding | None) -> None:
        if binding is None and self.conditional and self.scope.lookup(name) is not UNBOUND:
            # `except ImportError: X = None` and `else: X = None` are fallbacks: the
            # primary branch's binding is the one that uses upstream
            return
        self._keep_alternatives(name, binding)
        self.scope.names[name] = binding
        self.scope.values.pop(name, None)
        if self.narrowing:
            self.scope.narrowed[name] = self.narrowing
        else:
            self.scope.narrowed.pop(name, None)
        if isinstance(binding, Upstream) and (self.window.bounds or self.fallback_of):
            self.scope.conditions[name] = Bound(self.window, self.fallback_of)
        else:
            self.scope.conditions.pop(name, None)

    def _keep_alternatives(self, name: str, binding: Binding | None) -> None:
        """Before ``name`` is bound to ``binding``: keep the upstream object it held as an
        alternative when another branch bound it there (this one does not run on every
        path through that one); a binding on every path through the earlier ones is the
        only one left."""
        scope = self.scope
        earlier = scope.names.get(name) if name in scope.made_in else None
        kept: tuple[Alternative, ...] = ()
        if isinstance(binding, Upstream) and isinstance(earlier, Upstream):
            made_in = scope.made_in[name]
            if made_in[: len(self.branch)] != self.branch:
                here = Alternative(
                    earlier.path,
                    scope.conditions.get(name),
                    scope.narrowed.get(name, NOTHING_KNOWN),
                )
                kept = tuple(
                    a for a in (here, *scope.alternatives.get(name, ())) if a.path != binding.path
                )
        scope.made_in[name] = self.branch
        if kept:
            scope.alternatives[name] = kept
        else:
            scope.alternatives.pop(name, None)

    def binding(self, node: ast.expr | None) -> Binding | None:
        if node is None:
            return None
        binding, _, complete = self.chain(node)
        return binding if complete else None

    def upstream_path(self, node: ast.expr) -> str | None:
        """The upstream thing ``node`` names in whole, if any."""
        binding, _, complete = self.chain(node)
        return binding.path if isinstance(binding, Upstream) and complete else None

    def chain(self, node: ast.expr) -> tuple[Binding | None, int, bool]:
        """What an attribute chain is bound to: the binding, how many attributes were taken
        on upstream objects, and whether the whole chain was (False: it stopped early, at a
        runtime attribute or a name extraction knows nothing of)."""
        parts: list[str] = []
        root = node
        while isinstance(root, ast.Attribute):
            parts.append(root.attr)
            root = root.value
        binding = self.root(root)
        steps = 0
        for index, attr in enumerate(reversed(parts)):
            if isinstance(binding, Upstream):
                if attr in RUNTIME_ATTRIBUTES:
                    return binding, steps, False
                binding, steps = Upstream(f"{binding.path}.{attr}"), steps + 1
            elif isinstance(binding, Stdlib):
                binding = Stdlib(f"{binding.path}.{attr}")
            elif isinstance(binding, ProjectModule):
                binding = self.project.member(binding.name, attr)
            else:
                return binding, steps, index == len(parts)
        return binding, steps, True

    def star_of(self, node: ast.AST, target: str | None = None) -> str | None:
        """The module whose ``from <module> import *`` binds the name ``node`` is or starts
        from (None: the module has no single upstream star import to give it, it is a
        builtin, or a scope binds it); with ``target``, only where that is the name's
        upstream path or in it. Asked of every name walked: the cheap test goes first."""
        if len(self.upstream_stars) != 1:
            return None
        name = syntax.root_name(node)
        if name is None or name.id in _BUILTINS or self.scope.lookup(name.id) is not UNBOUND:
            return None
        star = self.upstream_stars[0]
        path = f"{star}.{name.id}"
        if target is not None and target != path and not target.startswith(f"{path}."):
            return None
        return star

    def root(self, node: ast.expr) -> Binding | None:
        if isinstance(node, ast.Name):
            found = self.scope.lookup(node.id)
            if found is UNBOUND:
                star = self.star_of(node)
                return None if star is None else Upstream(f"{star}.{node.id}")
            return found  # type: ignore[return-value]
        if isinstance(node, ast.Call):
            if (module := self._imported_module(node)) is not None:
                return self.project.module_binding(module)
            if (target := self._looked_up(node)) is not None:
                return Upstream(target)
        return None

    def _looked_up(self, node: ast.Call) -> str | None:
        """The upstream attribute ``getattr(x, "n"[, default])``, ``x.__dict__.get("n")`` or
        ``vars(x).get("n")`` looks up, if it names one."""
        if self._builtin(node.func, "getattr") and len(node.args) >= 2:
            owner, name_node = node.args[0], node.args[1]
        elif (found := guards.own_dict_lookup(node)) is not None:
            owner, name_node = found
        else:
            return None
        binding, _, complete = self.chain(owner)
        name = self._literal_string(name_node)
        if name is None or not complete or not isinstance(binding, Upstream):
            return None
        return f"{binding.path}.{name}"

    def _imported_module(self, node: ast.Call) -> str | None:
        """The literal module of ``importlib.import_module("x")`` / ``__import__("x")``."""
        callee = self._callee(node)
        importer = callee == Stdlib("importlib.import_module") or self._builtin(
            node.func, "__import__"
        )
        if not importer or not node.args or any(k.arg == "package" for k in node.keywords):
            return None
        name = self._literal_string(node.args[0])
        return name if name and not name.startswith(".") else None

    def _builtin(self, func: ast.expr, name: str) -> bool:
        return isinstance(func, ast.Name) and func.id == name and self.scope.lookup(name) is UNBOUND

    def _callee(self, node: ast.expr) -> Binding | None:
        return self.binding(node.func) if isinstance(node, ast.Call) else None

    def upstream_objects(self, argument: ast.expr) -> tuple[str, ...]:
        """The upstream objects an expression is: a chain, or ``eval`` of literal dotted
        names (``eval(f"trl.trainer.{name}.{method}")`` over literal loops)."""
        binding, _, complete = self.chain(argument)
        if isinstance(binding, Upstream) and complete:
            return (binding.path,)
        if not (
            isinstance(argument, ast.Call)
            and self._builtin(argument.func, "eval")
            and len(argument.args) == 1
        ):
            return ()
        value = self.value(argument.args[0])
        if not isinstance(value, Literals) or value.fragments:
            self.skip("getsource(eval(...)) of a string not known statically", argument)
            return ()
        found = []
        for text in value.strings():
            try:
                expression = ast.parse(text.strip(), mode="eval").body
            except SyntaxError:
                continue
            if isinstance(expression, (ast.Name, ast.Attribute)):
                binding, _, complete = self.chain(expression)
                if isinstance(binding, Upstream) and complete:
                    found.append(binding.path)
        return tuple(found)

    def value(self, node: ast.expr | None) -> Value | None:
        """What an expression may be, as far as anchors are concerned (pure)."""
        handler = _VALUES.get(type(node))
        return handler(self, node) if handler is not None else None

    def v_constant(self, node: ast.Constant) -> Value | None:
        return Literals((node.value,)) if isinstance(node.value, (str, int, float)) else None

    def v_display(self, node: ast.Tuple | ast.List | ast.Set | ast.Dict) -> Value | None:
        literal = self.literal(node)
        return None if literal is NOT_LITERAL else Literals((literal,))

    def v_name(self, node: ast.Name) -> Value | None:
        return self.scope.value(node.id)

    def v_attribute(self, node: ast.Attribute) -> Value | None:
        binding, _, complete = self.chain(node.value)
        if isinstance(binding, ProjectModule) and complete:
            return self.project.exports(binding.name).values.get(node.attr)
        return None

    def v_binary(self, node: ast.BinOp) -> Value | None:
        if not isinstance(node.op, ast.Add):
            return None
        left, right = self.value(node.left), self.value(node.right)
        if isinstance(left, Literals) and isinstance(right, Literals):
            return concatenate(left, right)
        return next((v for v in (left, right) if isinstance(v, (Text, Param))), None)

    def v_conditional(self, node: ast.IfExp) -> Value | None:
        return union(self.value(node.body), self.value(node.orelse))

    def v_boolean(self, node: ast.BoolOp) -> Value | None:
        if not isinstance(node.op, ast.Or):
            return None
        result: Value | None = None
        for value in node.values:
            result = union(result, self.value(value))
        return result

    def v_fstring(self, node: ast.JoinedStr) -> Literals | None:
        pieces: list[Literals] = []
        fragments: list[str] = []
        whole = True
        for part in fstring_parts(node):
            if isinstance(part, str):
                pieces.append(Literals((part,)))
                fragments.append(part)
                continue
            value = self.value(part.value) if isinstance(part, ast.FormattedValue) else None
            plain = isinstance(part, ast.FormattedValue) and part.format_spec is None
            if plain and part.conversion == -1 and isinstance(value, Literals):
                pieces.append(value)
            else:
                whole = False
        if whole:
            result: Literals | None = Literals(("",))
            for piece in pieces:
                result = concatenate(result, piece) if result is not None else None
            return result
        return Literals(tuple(fragments), fragments=True) if fragments else None

    def v_subscript(self, node: ast.Subscript) -> Value | None:
        base, index = self.value(node.value), self.value(node.slice)
        if not isinstance(base, Literals) or not isinstance(index, Literals):
            return None
        found: list[object] = []
        for container in base.values:
            for key in index.values:
                try:
                    found.append(container[key])  # type: ignore[index]
                except (KeyError, IndexError, TypeError):
                    continue
        return Literals(tuple(found)) if found else None

    def v_call(self, node: ast.Call) -> Value | None:  # noqa: PLR0911 - one return per callee
        func, args = node.func, node.args
        callee = self.binding(func)
        first = args[0] if args else None
        if callee == Stdlib("inspect.getsource") and first is not None:
            return self.source_of(first)
        if callee == Stdlib("textwrap.dedent") and first is not None:
            return _dedented(self.value(first))
        if callee == Stdlib("re.compile") and first is not None:
            pattern = self.value(first)
            if isinstance(pattern, Literals) and not pattern.fragments:
                flags = inline_flags(syntax.argument_or_keyword(node, 1, "flags"))
                return Pattern(tuple(flags + p for p in pattern.strings()))
            return None
        if callee == Stdlib("re.sub") and len(args) > 2:
            return _with_inserted(self.value(args[2]), self.value(args[1]))
        if isinstance(callee, ProjectFunction):
            return self.helper_result(callee, node)
        if isinstance(func, ast.Name) and first is not None and len(args) == 1:
            return self._builtin_result(func, first)
        if isinstance(func, ast.Attribute):
            receiver = self.value(func.value)
            if isinstance(receiver, (Text, Param)) and func.attr in _TEXT_METHODS:
                if func.attr == "replace" and len(args) > 1:
                    return _with_inserted(receiver, self.value(args[1]))
                return receiver
            if isinstance(receiver, Pattern) and func.attr == "sub" and len(args) > 1:
                return _with_inserted(self.value(args[1]), self.value(args[0]))
            if isinstance(receiver, Literals) and func.attr in ("items", "keys", "values"):
                return dict_view(receiver, func.attr)
        return None

    def helper_result(self, function: ProjectFunction, node: ast.Call) -> Value | None:
        if not self.project.takes_source(function) and not any(
            isinstance(self.value(a), (Text, Param))
            for a in (*node.args, *(k.value for k in node.keywords))
        ):
            return None  # neither reads a source nor is given one: not a text helper
        result, names = self.project.summary(function)
        if not isinstance(result, Param):
            return result if isinstance(result, Text) else None
        argument = syntax.argument(node, result.index, names)
        if argument is None:
            return None
        if not result.source:
            inner = self.value(argument)
            return _dedented(inner) if result.dedented else inner
        source = self.source_of(argument)
        return _dedented(source) if result.dedented else source

    def source_of(self, argument: ast.expr) -> Value | None:
        """``getsource(argument)``: upstream text, or inside a helper its parameter's."""
        objects = self.upstream_objects(argument)
        if objects:
            return Text(frozenset(objects))
        inner = self.value(argument)
        if isinstance(inner, Param) and not inner.source:
            return Param(inner.index, source=True)
        return None

    def _builtin_result(self, func: ast.Name, argument: ast.expr) -> Value | None:
        """``str(x)``: x; ``frozenset({"a", "b"})``, ``tuple([...])``: the display's
        members, a constant's as much as a literal's (``set("ab")`` is its letters: not
        one)."""
        if self._builtin(func, "str"):
            return self.value(argument)
        if func.id not in _CONTAINERS or not self._builtin(func, func.id):
            return None
        value = self.value(argument)
        if not isinstance(value, Literals) or value.fragments:
            return None
        if not all(isinstance(v, (tuple, list)) for v in value.values):
            return None
        return Literals(tuple(tuple(v) for v in value.values))  # type: ignore[arg-type]

    def literal(self, node: ast.expr) -> object:
        """The Python value of a literal display (names of constants included), or
        ``NOT_LITERAL``."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = [self.literal(e) for e in node.elts]
            if any(item is NOT_LITERAL for item in items):
                return NOT_LITERAL
            return tuple(items) if isinstance(node, ast.Tuple) else list(items)
        if isinstance(node, ast.Dict):
            return self.literal_dict(node)
        value = self.value(node)
        single = isinstance(value, Literals) and not value.fragments and len(value.values) == 1
        return value.values[0] if single else NOT_LITERAL  # type: ignore[union-attr]

    def literal_dict(self, node: ast.Dict) -> object:
        keys = [self.literal(k) if k is not None else NOT_LITERAL for k in node.keys]
        values = [self.literal(v) for v in node.values]
        if any(x is NOT_LITERAL for x in (*keys, *values)):
            return NOT_LITERAL
        try:
            return dict(zip(keys, values, strict=True))
        except TypeError:  # an unhashable key
            return NOT_LITERAL

    def _strings(self, node: ast.expr) -> tuple[str, ...]:
        """The strings ``node`` is or holds, all of them known: a literal, a tuple, list or
        set of literals, or a name bound to one of those; () where any is unknown."""
        value = self.value(node)
        if not isinstance(value, Literals) or value.fragments:
            return ()
        found: list[str] = []
        for item in value.values:
            items = item if isinstance(item, (tuple, list, set, frozenset)) else (item,)
            if not items or not all(isinstance(i, str) for i in items):
                return ()
            found.extend(items)  # type: ignore[arg-type]
        return tuple(dict.fromkeys(found))

    def _literal_string(self, node: ast.expr) -> str | None:
        value = self.value(node)
        if isinstance(value, Literals) and not value.fragments and len(value.values) == 1:
            only = value.values[0]
            return only if isinstance(only, str) else None
        return None


_VALUES: dict[type, Callable[[Values, Any], Value | None]] = {
    ast.Constant: Values.v_constant,
    ast.JoinedStr: Values.v_fstring,
    ast.Tuple: Values.v_display,
    ast.List: Values.v_display,
    ast.Set: Values.v_display,
    ast.Dict: Values.v_display,
    ast.Name: Values.v_name,
    ast.Attribute: Values.v_attribute,
    ast.BinOp: Values.v_binary,
    ast.Subscript: Values.v_subscript,
    ast.IfExp: Values.v_conditional,
    ast.BoolOp: Values.v_boolean,
    ast.Call: Values.v_call,
}


def _dedented(value: Value | None) -> Value | None:
    if isinstance(value, Text):
        return replace(value, dedented=True)
    if isinstance(value, Param):
        return Param(value.index, value.source, True)
    return None


def _with_inserted(text: Value | None, inserted: Value | None) -> Value | None:
    if isinstance(text, Text) and isinstance(inserted, Literals):
        return replace(text, inserted=text.inserted | frozenset(inserted.strings()))
    return text if isinstance(text, (Text, Param)) else None
