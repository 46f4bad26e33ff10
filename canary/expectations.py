"""The expectation vocabulary of catalog checks: each ``expect_*`` asserts one shape of
upstream code in a code index (:mod:`canary.codeindex`) and raises
:class:`~canary.errors.Drift` saying what upstream has instead.

Every Drift names its subject (the function or class handed in, or a module-level name:
the report diffs it between the last passing and the first failing release) and its kind:
``Drift.MISSING`` when the thing is gone, ``Drift.CHANGED`` otherwise. Plain functions over
the code index, with no pytest in them; checks import them from :mod:`canary.catalog`.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

from canary.codeindex import (
    POSITIONAL_ONLY,
    POSITIONAL_OR_KEYWORD,
    Assignment,
    Call,
    Class,
    ClassAttribute,
    Function,
    Module,
    Param,
    Scope,
    equivalent,
    normalised_text,
    renaming,
)
from canary.codeindex.equivalence import module_context
from canary.codeindex.flow import PARAMETER, Binding, mentions_of, reads_of, requires
from canary.errors import Drift, Subject
from canary.renaming import modulo_renaming

T = TypeVar("T")


class _Unset(enum.Enum):
    UNSET = "UNSET"


# ``expect_parameters(default=...)`` not given (None is a default a check may ask for).
_UNSET = _Unset.UNSET


def drift(subject: Function | Class | Module, message: str) -> Drift:
    """A Drift about ``subject`` (a function or class the check found, or a module) that is
    still there in another shape: for the rare check no expectation expresses."""
    return Drift(message, subject=_subject_of(subject), kind=Drift.CHANGED)


def _subject_of(found: Function | Class | Module, name: str | None = None) -> Subject:
    if isinstance(found, Module):
        return Subject(found.path, name)
    # A Function does not know its file (a Class does): the check's drift_subject fills
    # in the check's only file then.
    path = (found.path or None) if isinstance(found, Class) else None
    return Subject(path, found.qualname)


def expect_any_of(*alternatives: Callable[[], T]) -> T:
    """One of ``alternatives`` (expectations wrapped in ``lambda:``, likeliest first) holds;
    returns what the first that holds returns. The Drift lists why each one fails; its
    subject is the first alternative's, and it is MISSING only if every alternative is."""
    if not alternatives:
        raise ValueError("expect_any_of needs at least one alternative")
    failures: list[Drift] = []
    for alternative in alternatives:
        try:
            return alternative()
        except Drift as exc:
            failures.append(exc)
    # Alternatives that fail the same way (a call none of them finds) are listed once.
    distinct = list(dict.fromkeys(str(exc) for exc in failures))
    missing = all(exc.kind == Drift.MISSING for exc in failures)
    if len(distinct) == 1:
        message = distinct[0]
    else:
        listing = "; ".join(f"({i}) {text}" for i, text in enumerate(distinct, 1))
        message = f"none of {len(failures)} alternatives holds: {listing}"
    raise Drift(
        message,
        subject=failures[0].subject,
        kind=Drift.MISSING if missing else Drift.CHANGED,
    )


def expect_parameters(
    function: Function,
    *names: str,
    positional: int | None = None,
    keyword: bool | None = None,
    default: object = _UNSET,
) -> tuple[Param, ...]:
    """``function`` has each of ``names`` as a named parameter (not only via **kwargs), and
    what a caller relies on about them, each read as the sentence it asserts:

    * ``positional=i``: a call can pass them by position, the first at index ``i`` of the
      signature as written (``self`` is index 0 of a method), the next at ``i + 1``...: a
      parameter made keyword-only, or moved, breaks a positional call;
    * ``keyword=True``: a call can pass each as ``name=`` (positional-or-keyword or
      keyword-only); ``keyword=False``: only by position (positional-only);
    * ``default=``: each defaults to that value: a string is the default's source text
      (``"-100"``, ``"'mean'"``, compared normalised), any other value a literal (``-100``,
      ``None``, ``True``). A parameter without a default fails.

    Keyword-only parameters never count as positional. Returns the parameters, in the order
    of ``names``."""
    signature = function.signature
    missing = [name for name in names if not signature.has(name)]
    if missing:
        raise drift(
            function,
            f"{function.qualname} has no parameter {', '.join(map(repr, missing))}; "
            f"its signature is {signature}",
        )
    params = tuple(p for name in names if (p := signature.param(name)) is not None)
    problems = []
    for offset, param in enumerate(params):
        if positional is not None:
            problems.extend(_position_problem(signature.params, param, positional + offset))
        if keyword is not None and param.keyword != keyword:
            problems.append(
                f"{param.name} is {_kind(param)}, so a call passing {param.name}=... breaks"
                if keyword
                else f"{param.name} is {_kind(param)}, not positional-only"
            )
        if default is not _UNSET:
            problems.extend(_default_problem(param, default))
    if problems:
        raise drift(
            function,
            f"{function.qualname}: {'; '.join(problems)}; its signature is {signature}",
        )
    return params


def _kind(param: Param) -> str:
    return param.kind.replace("_", "-")


def _position_problem(params: tuple[Param, ...], param: Param, index: int) -> list[str]:
    if not param.positional:
        return [
            f"{param.name} is {_kind(param)} now, so a call passing it by position "
            f"(argument {index}) breaks"
        ]
    actual = params.index(param)
    if actual != index:
        there = params[index].name if index < len(params) else "nothing"
        return [
            f"{param.name} is at position {actual}, not {index} (a positional call hands "
            f"{there} what it meant for {param.name})"
        ]
    return []


def _default_problem(param: Param, default: object) -> list[str]:
    wanted = default if isinstance(default, str) else repr(default)
    if param.default is None:
        return [f"{param.name} has no default now (expected {wanted})"]
    if not equivalent(wanted, param.default):
        return [f"{param.name} defaults to {param.default}, not {wanted}"]
    return []


def expect_no_parameter(function: Function, *names: str) -> None:
    """``function`` has none of ``names`` as a named parameter (a renamed parameter whose
    old name must not come back)."""
    present = [name for name in names if function.signature.has(name)]
    if present:
        raise drift(
            function,
            f"{function.qualname} takes {', '.join(map(repr, present))} again; "
            f"its signature is {function.signature}",
        )


def expect_leading_parameters(function: Function, *names: str) -> None:
    """``function``'s positional parameters start with exactly ``names``, in that order (a
    caller that passes them by position; keyword-only parameters do not count)."""
    if function.signature.positional[: len(names)] != names:
        raise drift(
            function,
            f"{function.qualname}{function.signature} no longer starts ({', '.join(names)}) "
            "among the parameters a call can pass by position",
        )


def expect_parameter_kind(function: Function, name: str, kind: str) -> Param:
    """``function`` has parameter ``name`` of ``kind`` (``canary.codeindex.KEYWORD_ONLY``,
    ``VAR_KEYWORD``, ...): ``**template_kwargs`` is a VAR_KEYWORD parameter named
    "template_kwargs"."""
    param = function.signature.param(name)
    if param is None or param.kind != kind:
        found = f"is {param.kind.replace('_', '-')}" if param is not None else "is not there"
        raise drift(
            function,
            f"{function.qualname} has no {kind.replace('_', '-')} parameter {name!r} ({name} "
            f"{found}); its signature is {function.signature}",
        )
    return param


def expect_keyword_accepted(function: Function, name: str) -> None:
    """``function`` can be called with ``name=...`` (a parameter, or **kwargs)."""
    if not function.signature.accepts_keyword(name):
        raise drift(
            function,
            f"{function.qualname} cannot take {name}=...; its signature is {function.signature}",
        )


def expect_decorated(found: Function | Class, *decorators: str) -> str:
    """``found`` is decorated with one of ``decorators`` (normalised text, compared whole:
    ``"property"``, ``"contextlib.contextmanager"``); returns the one found."""
    for decorator in decorators:
        if normalised_text(decorator) in found.decorators:
            return decorator
    has = ", ".join(f"@{d}" for d in found.decorators) or "no decorator"
    raise drift(
        found,
        f"{found.qualname} is no longer decorated {' or '.join(f'@{d}' for d in decorators)}; "
        f"it has {has}",
    )


def expect_call(
    function: Function,
    callee: str,
    *,
    args: Iterable[str] = (),
    keywords: Mapping[str, str] | None = None,
) -> tuple[Call, ...]:
    """``function`` calls ``callee`` at least once, with ``args`` as its leading positional
    arguments and ``keywords`` among its keyword arguments (normalised text, compared modulo
    equivalent rewrites and one consistent renaming of locals per call; the key ``"**"`` is
    a ``**mapping`` argument); returns those calls."""
    found = function.calls_to(callee) or _calls_through_aliases(function, callee)
    if not found:
        called = sorted({call.func for call in function.calls})
        listing = ", ".join(called) or "nothing"
        message = f"{function.qualname} no longer calls {callee}; it calls: {listing}"
        raise drift(function, message)
    leading = tuple(args)
    wanted = [(None if k == "**" else k, v) for k, v in (keywords or {}).items()]
    scope = _scope(function)
    matching = tuple(c for c in found if _call_matches(c, leading, wanted, scope))
    if not matching:
        shown = [*leading, *(f"**{v}" if k is None else f"{k}={v}" for k, v in wanted)]
        raise drift(
            function,
            f"{function.qualname} no longer calls {callee}({', '.join(shown)}, ...); its calls: "
            + "; ".join(f"line {c.line}: {c.source}" for c in found),
        )
    return matching


def _scope(function: Function) -> Callable[[], Scope]:
    # Asked only when text differs and a renamed local could explain it.
    return function.deferred_scope


def _same(
    expected: str,
    actual: str,
    scope: Callable[[], Scope] | None,
    mapping: dict[str, str],
    *,
    boolean: bool = False,
) -> dict[str, str] | None:
    """``renaming`` with a fast path for the common case, identical text."""
    if expected == actual and not any(name in expected for name in mapping):
        return mapping
    return renaming(expected, actual, scope, boolean=boolean, given=mapping)


def _call_matches(
    call: Call,
    leading: tuple[str, ...],
    wanted: list[tuple[str | None, str]],
    scope: Callable[[], Scope],
) -> bool:
    if len(call.args) < len(leading):
        return False
    mapping: dict[str, str] | None = {}
    for expected, actual in zip(leading, call.args, strict=False):
        mapping = _same(expected, actual, scope, mapping)
        if mapping is None:
            return False
    for key, expected in wanted:
        given = _argument(call, key, scope) if key is not None else None
        if given is not None and call.keyword(key) is None:
            # passed by position where the callee's signature binds it to ``key``
            mapping = _same(expected, given, scope, mapping)
            if mapping is None:
                return False
            continue
        for name, actual in call.keywords:
            found = _same(expected, actual, scope, mapping) if name == key else None
            if found is not None:
                mapping = found
                break
        else:
            return False
    return True


def _argument(
    call: Call, keyword: str, scope: Callable[[], Scope], positions: Sequence[str] = ()
) -> str | None:
    """What ``call`` passes its callee's parameter ``keyword``: as ``keyword=``, or by
    position where the callee's known signature binds that position to it (the module's
    own, else ``positions``: what a check declares of a callee in another package)."""
    known = _positions(call, scope)
    if not known and positions and not any(arg.startswith("*") for arg in call.args):
        known = {name: index for index, name in enumerate(positions)}
    index = known.get(keyword)
    if index is not None and index < len(call.args) and not call.args[index].startswith("*"):
        return call.args[index]
    return call.keyword(keyword)


def _positions(call: Call, scope: Callable[[], Scope]) -> dict[str, int]:
    """Where each parameter of ``call``'s callee is bound by position, when the callee is a
    function (or ``self.`` method) of the module whose signature is known; else nothing.
    Positional-only and keyword-only parameters are not among them."""
    context = scope().context
    callee = context.callees.get(call.func) if context is not None else None
    if callee is None or any(arg.startswith("*") for arg in call.args):
        return {}
    return {
        name: index
        for index, name in enumerate(callee.positional)
        if index >= callee.positional_only
    }


def expect_defined(module: Module, name: str) -> None:
    """``module`` itself defines ``name`` (class, function or assignment): an import of it
    from elsewhere does not count, because the check is about where the code lives."""
    if module.defines(name):
        return
    if name in module.imports:
        imported = module.imports[name]
        raise Drift(
            f"{name!r} is only imported in {module.where} ({imported.statement}, "
            f"line {imported.line}); it is defined elsewhere now",
            subject=_subject_of(module, name),
            kind=Drift.CHANGED,
        )
    module.find(name)  # raises Drift listing what is defined there


def expect_module_value(
    module: Module, name: str, *, values: Iterable[str] = (), literals: Iterable[object] = ()
) -> Assignment:
    """``module`` assigns ``name`` at module level to one of ``values`` (normalised text:
    ``"version('trl')"``) or of ``literals`` (compared as literals: ``"1.2.0"``); returns
    that assignment."""
    texts, wanted = tuple(values), tuple(literals)
    if not texts and not wanted:
        raise ValueError("expect_module_value needs values= or literals=")
    assignment = module.assignment(name)
    if any(equivalent(text, assignment.value) for text in texts) or (
        wanted and assignment.literal in wanted
    ):
        return assignment
    expected = " or ".join([*texts, *map(repr, wanted)])
    raise Drift(
        f"{module.where} assigns {name} = {assignment.value} (line {assignment.line}), "
        f"not {expected}",
        subject=_subject_of(module, name),
        kind=Drift.CHANGED,
    )


def expect_class_attribute(cls: Class, name: str, *values: object) -> ClassAttribute:
    """``cls`` assigns ``name`` in its own body, to one of ``values`` when given (compared
    as literals: ``expect_class_attribute(c, "accepts_loss_kwargs", False)``)."""
    attribute = cls.attribute(name)
    if values and attribute.literal not in values:
        wanted = " or ".join(map(repr, values))
        raise drift(
            cls,
            f"{cls.qualname}.{name} is {attribute.value} in {cls.where} (line {attribute.line}); "
            f"expected {wanted}",
        )
    return attribute


def expect_not_declared(cls: Class, name: str) -> None:
    """``cls`` does not bind ``name`` in its own body (no default a fix would inherit)."""
    if cls.declares(name):
        found = cls.attributes.get(name)
        how = f" = {found.value} (line {found.line})" if found is not None else ""
        raise drift(cls, f"{cls.qualname} now declares {name}{how} in {cls.where}")


def expect_base(cls: Class, *bases: str) -> str:
    """``cls`` derives directly from one of ``bases`` (a module imported under an alias
    is that module: ``enum_mm.Enum`` is ``enum.Enum`` after ``import enum as enum_mm``);
    returns the one found."""
    context = module_context(cls._text)
    aliases = context.aliases if context is not None else {}
    spelled = {_unaliased(b, aliases) for b in cls.bases}
    for base in bases:
        if base in cls.bases or base in spelled:
            return base
    raise drift(
        cls,
        f"class {cls.qualname} in {cls.where} derives from ({', '.join(cls.bases)}), "
        f"not from {' or '.join(bases)}",
    )


def _calls_through_aliases(function: Function, callee: str) -> tuple[Call, ...]:
    """The calls to ``callee`` written through a module alias (``inspect_mm.signature``
    after ``import inspect as inspect_mm`` is ``inspect.signature``)."""
    aliases = function.deferred_scope.context.aliases
    if not aliases:
        return ()
    return tuple(c for c in function.calls if _unaliased(c.func, aliases) == callee)


def _unaliased(dotted: str, aliases: Mapping[str, str]) -> str:
    head, dot, rest = dotted.partition(".")
    return f"{aliases[head]}{dot}{rest}" if head in aliases else dotted


def expect_hasattr(
    function: Function, attribute: str, *, only_on: str | None = None
) -> tuple[str, ...]:
    """``function`` calls ``hasattr(<object>, "<attribute>")``; returns the objects it asks.
    With ``only_on``, it asks exactly once, on that object (``"unwrapped_model"``, or the
    local it was renamed to)."""
    calls = [c for c in function.calls_to("hasattr") if _names_attribute(c, attribute)]
    if not calls:
        asked = sorted({f"hasattr({', '.join(c.args)})" for c in function.calls_to("hasattr")})
        listing = ", ".join(asked) or "nothing"
        raise drift(
            function,
            f"{function.qualname} no longer calls hasattr(..., {attribute!r}); "
            f"its hasattr targets are: {listing}",
        )
    objects = tuple(str(c.arg(0)) for c in calls)
    # The object asked is usually a local (unwrapped_model): a renamed one is the same ask.
    if only_on is not None and not (
        len(objects) == 1 and _same(only_on, objects[0], _scope(function), {}) is not None
    ):
        raise drift(
            function,
            f"{function.qualname} asks hasattr(..., {attribute!r}) on {', '.join(objects)}, "
            f"not on {only_on} alone",
        )
    return objects


def _names_attribute(call: Call, attribute: str) -> bool:
    return len(call.args) >= 2 and call.literal_args[1] == attribute


def expect_assignment(function: Function, target: str) -> tuple[Assignment, ...]:
    """``function`` assigns ``target`` (normalised text: ``"self.model_accepts_loss_kwargs"``);
    returns those assignments, in source order."""
    found = function.assignments_to(target)
    if not found:
        assigned = sorted({t for a in function.assignments for t in a.unpacked or a.targets})
        raise drift(
            function,
            f"{function.qualname} no longer assigns {target}; it assigns: "
            f"{', '.join(assigned) or 'nothing'}",
        )
    return found


def expect_mentions(function: Function, *names: str) -> None:
    """Every one of ``names`` appears in ``function``'s body as a name or attribute (a
    fingerprint of the code path a fix relies on)."""
    missing = [name for name in names if not function.mentions(name)]
    if missing:
        raise drift(
            function,
            f"{function.qualname} ({function.line}-{function.end_line}) no longer mentions "
            f"{', '.join(missing)}",
        )


def expect_not_mentioned(function: Function, *names: str) -> None:
    """None of ``names`` appears in ``function``'s body as a name or attribute (a code path
    a fix must not meet there)."""
    present = [name for name in names if function.mentions(name)]
    if present:
        raise drift(
            function,
            f"{function.qualname} ({function.line}-{function.end_line}) now mentions "
            f"{', '.join(present)}",
        )


def expect_returns(function: Function, *values: str, when: str | None = None) -> str:
    """``function`` has a ``return`` of one of ``values`` (normalised text:
    ``"(batch_samples, None)"``, compared modulo equivalent rewrites); with ``when``, on
    every path that requires that condition (see :func:`expect_returns_by_branch`). Returns
    the value found."""
    scope = _scope(function)
    if when is not None:
        under = [r for r in function.flow.returns if r.requires(when, _scope(function))]
        matched = [
            next(
                (v for v in values if r.value and _same(v, r.value, scope, {}) is not None),
                None,
            )
            for r in under
        ]
        if matched and None not in matched:
            return str(matched[0])
        raise _branches_drift(function, " or ".join(values), when)
    for value in values:
        if any(_same(value, r, scope, {}) is not None for r in function.returns):
            return value
    raise drift(
        function,
        f"{function.qualname} no longer returns {' or '.join(values)}; "
        f"it returns: {', '.join(function.returns) or 'nothing'}",
    )


def expect_never_assigns(cls: Class, target: str, *, helpers: Module | None = None) -> None:
    """No method of ``cls`` assigns ``target`` (``"self.model_accepts_loss_kwargs"``): the
    class leaves that value to the code it inherits. With ``helpers`` (the class's module),
    nor does a module-level helper a method calls, on the object the method hands it."""
    found = [
        (method, assignment)
        for method in cls.methods.values()
        for assignment in assignments_via_helpers(method, target, helpers)
    ]
    if found:
        where = ", ".join(
            f"{m.qualname} (line {a.line}: = {a.value}"
            + ("" if a in m.assignments else ", in a module-level helper it calls there")
            + ")"
            for m, a in found
        )
        raise drift(cls, f"{cls.qualname} now assigns {target} in {cls.where}: {where}")


def assignments_via_helpers(
    function: Function, target: str, helpers: Module | None
) -> tuple[Assignment, ...]:
    """``function``'s assignments to ``target`` and, with ``helpers`` (its module), those
    made one call deep by the module-level functions of that module it calls, in source
    order: ``_disable(self)`` whose body sets ``trainer.flag = False`` assigns
    ``self.flag`` at the call's line, under the call's guards and its own. A helper's
    parameter stands for the argument the call passes it; deeper calls are not followed."""
    own = function.assignments_to(target)
    if helpers is None:
        return own
    followed: list[Assignment] = []
    for call in function.calls:
        helper = helpers.functions.get(call.func)
        if helper is None or helper is function:
            continue
        bound = _bound_arguments(helper, call)
        for assignment in helper.assignments:
            for assigned in assignment.targets:
                head, dot, rest = assigned.partition(".")
                if head in bound and dot and f"{bound[head]}.{rest}" == target:
                    followed.append(
                        replace(
                            assignment,
                            targets=(target,),
                            unpacked=(),
                            line=call.line,
                            guards=(*call.guards, *assignment.guards),
                        )
                    )
    return tuple(sorted((*own, *followed), key=lambda a: a.line))


def _bound_arguments(helper: Function, call: Call) -> dict[str, str]:
    """Which argument text each named parameter of ``helper`` gets from ``call``."""
    positional = [
        p.name
        for p in helper.signature.params
        if p.kind in (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD)
    ]
    bound = {
        name: arg
        for name, arg in zip(positional, call.args, strict=False)
        if not arg.startswith("*")
    }
    bound.update({k: v for k, v in call.keywords if k is not None and helper.signature.has(k)})
    return bound


def expect_assigned_after(
    function: Function, target: str, callee: str, *, helpers: Module | None = None
) -> tuple[Assignment, ...]:
    """``function`` assigns ``target`` after its first call to ``callee``, so the value is
    not overwritten by that call (an attribute set before ``super().__init__`` is lost);
    returns the assignments that follow the call. With ``helpers`` (the function's
    module), assignments made by the module-level helpers it calls count too."""
    (first, *_) = expect_call(function, callee)
    assignments = assignments_via_helpers(function, target, helpers) or expect_assignment(
        function, target
    )
    after = tuple(a for a in assignments if a.line > first.line)
    if not after:
        lines = ", ".join(str(a.line) for a in assignments)
        raise drift(
            function,
            f"{function.qualname} assigns {target} (line {lines}) only before it calls "
            f"{callee} (line {first.line}), which overwrites it",
        )
    return after


def expect_assignment_where(
    function: Function,
    target: str,
    *,
    guard: str | None = None,
    unguarded: bool = False,
    values: Iterable[str] = (),
    augmented: str | None = None,
    after: str | None = None,
    when: str | None = None,
    helpers: Module | None = None,
) -> Assignment:
    """``function`` assigns ``target`` under ``guard`` (one enclosing ``if`` test, normalised
    text) or, with ``unguarded``, under no ``if`` at all; when ``values`` are given, to one of
    them (normalised text); with ``augmented`` as that augmented assignment (``"*"`` for
    ``*=``); with ``after``, after the function's first call to that callee; with ``when``,
    under a guard that is that condition or has it as a part of an ``and`` (a negated or
    ``or``-ed one does not count); with ``helpers`` (the function's module), assignments
    made by the module-level helpers it calls count too (:func:`assignments_via_helpers`).
    Guard, values and (when values are given) the target are compared modulo equivalent
    rewrites, with one consistent renaming of locals (:mod:`canary.codeindex.equivalence`).
    Returns the first such assignment. The Drift lists every assignment to ``target`` with
    its guards, so a changed condition or value reads as what upstream decides instead."""
    wanted = tuple(values)
    first_line = expect_call(function, after)[0].line if after is not None else 0
    scope = _scope(function)
    own = _assignments_of(function, target, renamed=bool(wanted))
    followed = [
        (a, {})
        for a in assignments_via_helpers(function, target, helpers)
        if a not in function.assignments
    ]
    candidates = sorted([*own, *followed], key=lambda pair: pair[0].line)
    found = [
        assignment
        for assignment, mapping in candidates
        if not (unguarded and assignment.guards)
        and (when is None or requires(assignment.guards, when, _scope(function)))
        and (augmented is None or assignment.op == augmented)
        and assignment.line > first_line
        and _guard_and_value_match(assignment, guard, wanted, scope, mapping)
    ]
    if found:
        return found[0]
    conditions = []
    if augmented is not None:
        conditions.append(f"with {augmented}=")
    if guard is not None:
        conditions.append(f"under `if {guard}`")
    if when is not None:
        conditions.append(f"only when `{when}`")
    if unguarded:
        conditions.append("unconditionally")
    if after is not None:
        conditions.append(f"after calling {after} (line {first_line})")
    if wanted:
        conditions.append("to " + " or ".join(f"`{v}`" for v in wanted))
    listing = "; ".join(
        f"line {a.line}: {target} {a.op or ''}= {a.value}"
        + (f" under {' and '.join(f'`{g}`' for g in a.guards)}" if a.guards else "")
        for a, _ in candidates or [(a, {}) for a in function.assignments_to(target)]
    )
    raise drift(
        function,
        f"{function.qualname} no longer assigns {target} {' '.join(conditions)}; "
        f"its assignments to {target}: {listing or 'none'}",
    )


def assignments_to(function: Function, target: str) -> tuple[Assignment, ...]:
    """``function``'s assignments to ``target`` (possibly none); where it has none, those
    to the one local that ``target`` names under another name, when the rest of the target
    (``['num_steps']``, ``.attr``) pins down exactly one renaming: a renamed local dict is
    the same dict. A bare name is never guessed (any local would do)."""
    exact = function.assignments_to(target)
    if exact or isinstance(_parsed(target), ast.Name):
        return exact
    found = _assignments_of(function, target, renamed=True)
    renamings = {tuple(sorted(m.items())) for _, m in found}
    if len(renamings) != 1 or not next(iter(renamings)):
        return ()
    return tuple(a for a, _ in found)


def _parsed(text: str) -> ast.expr | None:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        return None


def _assignments_of(
    function: Function, target: str, *, renamed: bool
) -> list[tuple[Assignment, dict[str, str]]]:
    """The assignments to ``target`` with the renaming each needs: exact ones, else (with
    ``renamed``, where a value pins down which assignment is meant) those to a local that
    ``target`` names under another name."""
    exact = function.assignments_to(target)
    if exact or not renamed:
        return [(a, {}) for a in exact]
    scope = _scope(function)
    found = []
    for assignment in function.assignments:
        for name in (*assignment.targets, *assignment.unpacked):
            mapping = renaming(target, name, scope)
            if mapping is not None:
                found.append((assignment, mapping))
                break
    return found


def _guard_and_value_match(
    assignment: Assignment,
    guard: str | None,
    values: tuple[str, ...],
    scope: Callable[[], Scope],
    mapping: dict[str, str] | None,
) -> bool:
    if guard is not None:
        mapping = _first_match((guard,), assignment.guards, scope, mapping, boolean=True)
    if mapping is not None and values:
        mapping = _first_match(values, (assignment.value,), scope, mapping)
    return mapping is not None


def _first_match(
    expected: tuple[str, ...],
    actual: tuple[str, ...],
    scope: Callable[[], Scope],
    mapping: dict[str, str] | None,
    *,
    boolean: bool = False,
) -> dict[str, str] | None:
    """The renaming under which one of ``expected`` is one of ``actual``, else None."""
    if mapping is None:
        return None
    for wanted in expected:
        for text in actual:
            found = _same(wanted, text, scope, mapping, boolean=boolean)
            if found is not None:
                return found
    return None


def expect_bound(module: Module, name: str, *, imported_from: str | None = None) -> str:
    """``module`` binds ``name`` at module level, so ``from <module> import <name>`` works:
    a class, function or assignment there, or an import (from ``imported_from`` when given).
    Returns how it is bound: "class", "function", "assignment" or "import"."""
    if imported_from is None:
        for kind, table in (
            ("class", module.classes),
            ("function", module.functions),
            ("assignment", module.assignments),
        ):
            if name in table:
                return kind
    if name in module.imports:
        imported = module.imports[name]
        if imported_from is None or imported.module == imported_from:
            return "import"
        raise Drift(
            f"{module.where} imports {name!r} from {imported.module or imported.imported} "
            f"(line {imported.line}), not from {imported_from}",
            subject=_subject_of(module, name),
            kind=Drift.CHANGED,
        )
    if imported_from is not None and module.defines(name):
        raise Drift(
            f"{module.where} binds {name!r} itself now, not by importing {imported_from}",
            subject=_subject_of(module, name),
            kind=Drift.CHANGED,
        )
    module.find(name)  # raises Drift listing what is defined there
    return "class"  # unreachable: find() raises for a name bound in none of the tables


def expect_not_bound(module: Module, name: str) -> None:
    """``module`` binds no ``name`` at module level, neither defined nor imported there."""
    if module.binds(name):
        how = module.how_bound(name)
        raise Drift(
            f"{module.where} now binds {name!r}{how}",
            subject=_subject_of(module, name),
            kind=Drift.CHANGED,
        )


# -- data flow and returns by branch (canary.codeindex.flow) -------------------------------


def _decided(function: Function, name: str) -> None:
    """Fail closed: a check about where a value comes from proves nothing where the
    function's own text cannot say it."""
    flow = function.flow
    if flow.opaque:
        why = "it calls locals(), vars(), exec or eval"
    elif name in flow.undecided:
        why = f"it declares {name} global or nonlocal"
    else:
        return
    raise drift(
        function,
        f"{function.qualname}: cannot tell where {name} comes from ({why}); read it and "
        "restate this check",
    )


def _listing(bindings: Iterable[Binding]) -> str:
    return "; ".join(b.describe() for b in bindings) or "none"


@modulo_renaming("name", "origins")
def expect_reaches(
    function: Function,
    name: str,
    callee: str,
    *,
    keyword: str | None = None,
    origins: Iterable[str] = (),
    positions: Sequence[str] = (),
) -> tuple[Call, ...]:
    """Every call of ``function`` to ``callee`` is handed the value of ``name`` (in its
    ``keyword=`` argument when given, else in any argument), and on no path to such a call
    is that value replaced: every binding that replaces it there is the parameter ``name``
    or has one of ``origins`` (normalised values). ``x = x.to(device)`` keeps it; ``x =
    None`` on any path to the call is drift. Returns those calls.

    ``positions``: the callee's positional parameters (after ``self``) when it lives in
    another package (``super().compute_loss`` reaching transformers' Trainer), so that the
    value passed at ``keyword``'s index counts as ``keyword=`` (:mod:`canary.checks.contracts`)."""
    _decided(function, name)
    calls = expect_call(function, callee)
    flow = function.flow
    for call in calls:
        given = (
            [_argument(call, keyword, _scope(function), positions)]
            if keyword is not None
            else [*call.args, *(value for _, value in call.keywords)]
        )
        if not any(value is not None and name in reads_of(value) for value in given):
            where = f"{keyword}=" if keyword is not None else "its arguments"
            raise drift(
                function,
                f"{function.qualname} calls {call.source} (line {call.line}) without {name} "
                f"in {where}",
            )
        allowed = set(origins)
        history = flow.history(name, call.position)
        replacing = [b for b in history if not b.derives]
        foreign = [b for b in replacing if b.kind != PARAMETER and b.value not in allowed]
        if foreign or not replacing:
            raise drift(
                function,
                f"{function.qualname}: the {name} that reaches {callee} (line {call.line}) "
                f"{'may be replaced' if foreign else 'comes from nowhere it binds'} on the "
                f"way: {_listing(foreign or history)}; its value there is made by: "
                f"{_listing(history)}",
            )
    return calls


@modulo_renaming("target", "args", "guard", "values", "carrying")
def expect_flows_into(
    function: Function,
    target: str,
    callee: str | None,
    *,
    args: Iterable[str] = (),
    guard: str | None = None,
    values: Iterable[str] = (),
    carrying: str | None = None,
) -> Binding:
    """``function`` binds ``target`` (normalised: ``"kwargs['num_items_in_batch']"``; under
    ``guard`` and to one of ``values`` when given) and that binding is part of what it
    calls ``callee`` with (its calls with leading ``args`` when given, as
    :func:`expect_call` matches them; ``None``: of what it returns): it reaches a call
    through the locals the call's arguments read (``inputs = {**inputs, **kwargs}``), and
    nothing replaces it after it on a path there. With ``carrying``, its value reads that
    name, which arrives unreplaced (as in
    :func:`expect_reaches`). Returns the binding."""
    wanted = tuple(values)
    flow = function.flow
    found = [
        b
        for b in flow.bindings
        if b.target == target and _binding_matches(b, guard, wanted, _scope(function))
    ]
    if not found:
        root = target.split("[", maxsplit=1)[0].split(".", maxsplit=1)[0]
        raise drift(
            function,
            f"{function.qualname} no longer binds {target}"
            + (f" under `if {guard}`" if guard is not None else "")
            + (" to " + " or ".join(f"`{v}`" for v in wanted) if wanted else "")
            + f"; its bindings of {root}: {_listing(flow.of(root))}",
        )
    binding = found[0]
    _decided(function, binding.name)
    if callee is None:
        points = [(r, reads_of(r.value or ""), f"return {r.value}") for r in flow.returns]
        into = "what the function returns"
    else:
        calls = expect_call(function, callee, args=args)
        points = [(c.position, _call_reads(c), c.source) for c in calls]
        into = callee
    reached = False
    for at, reads, shown in points:
        sources = {b for read in reads for b in flow.sources(read, at) if b.name == binding.name}
        if not any(b is binding for b in sources):
            continue
        # Replaced after it on a path: a later binding of the same name that it reaches
        # and that does not keep its value.
        later = [
            b
            for b in sources
            if not b.derives
            and b is not binding  # itself again, on a loop's next pass
            and any(r is binding for r in flow.reaching(b.name, b))
        ]
        if later:
            raise drift(
                function,
                f"{function.qualname}: {binding.describe()} may be replaced before it "
                f"reaches `{shown}` by: {_listing(later)}",
            )
        reached = True
    if not reached:
        raise drift(
            function,
            f"{function.qualname}: {binding.describe()} never reaches {into}: "
            + ("; ".join(shown for _, _, shown in points) or "nothing"),
        )
    if carrying is not None:
        _decided(function, carrying)
        if carrying not in binding.reads:
            raise drift(
                function, f"{function.qualname}: {binding.describe()} no longer reads {carrying}"
            )
        replacing = [b for b in flow.history(carrying, binding) if not b.derives]
        foreign = [b for b in replacing if b.kind != PARAMETER]
        if foreign or not replacing:
            raise drift(
                function,
                f"{function.qualname}: the {carrying} that {binding.describe()} hands on may "
                f"be replaced before it: {_listing(foreign or replacing)}",
            )
    return binding


def _binding_matches(
    binding: Binding, guard: str | None, values: tuple[str, ...], scope: Callable[[], Scope]
) -> bool:
    """``binding`` is under ``guard`` and makes one of ``values`` (either may be absent),
    compared modulo equivalent rewrites with one consistent renaming of locals."""
    mapping: dict[str, str] | None = {}
    if guard is not None:
        mapping = _first_match((guard,), binding.guards, scope, mapping, boolean=True)
    if mapping is not None and values:
        mapping = _first_match(values, (binding.expression or "",), scope, mapping)
    return mapping is not None


def _call_reads(call: Call) -> frozenset[str]:
    return frozenset().union(
        *(reads_of(a) for a in call.args), *(reads_of(v) for _, v in call.keywords)
    )


@modulo_renaming("name", "values", "guard")
def expect_updated_once(
    function: Function,
    name: str,
    callee: str,
    *,
    mentioning: Iterable[str],
    values: Iterable[str],
    guard: str | None = None,
) -> Binding:
    """On the way to every call of ``function`` to ``callee``, the value of ``name`` is
    changed by exactly one binding that mentions one of ``mentioning`` (names or attributes:
    ``"gradient_accumulation_steps"``), and that one makes one of ``values`` (normalised;
    ``loss /= n`` makes ``loss / n``, like ``loss = loss / n``) under ``guard`` when given.
    A second such change on another path (the loss divided twice), or the one change under
    another guard, is drift. Returns the binding."""
    _decided(function, name)
    words = frozenset(mentioning)
    wanted = tuple(values)
    flow = function.flow
    found: Binding | None = None
    for call in expect_call(function, callee):
        history = flow.history(name, call.position)
        changes = [b for b in history if b.value is not None and mentions_of(b.value) & words]
        shown = f"its changes on the way to {callee} (line {call.line}): {_listing(changes)}"
        if len(changes) != 1:
            many = "more than once" if changes else "never"
            raise drift(
                function,
                f"{function.qualname} changes {name} by {' or '.join(sorted(words))} {many}; "
                + shown,
            )
        (change,) = changes
        if not _binding_matches(change, guard, wanted, _scope(function)):
            expected = " or ".join(f"`{name} = {v}`" for v in wanted)
            under = f" under `if {guard}`" if guard is not None else ""
            raise drift(function, f"{function.qualname} no longer sets {expected}{under}; " + shown)
        found = change
    assert found is not None  # expect_call returned at least one call
    return found


@modulo_renaming("condition")
def expect_guarded(function: Function, found: Call | Assignment | Binding, condition: str) -> None:
    """``found`` (a call or assignment of ``function``) runs only under ``condition``
    (normalised): one of its ``if`` guards is it, or has it as a part of an ``and``. A
    negated or ``or``-ed condition does not count."""
    if not requires(found.guards, condition, _scope(function)):
        what = found.source if isinstance(found, Call) else f"{'/'.join(_targets(found))}"
        raise drift(
            function,
            f"{function.qualname}: {what} (line {found.line}) no longer runs only under "
            f"`{condition}`; its guards: {'; '.join(f'`{g}`' for g in found.guards) or 'none'}",
        )


@modulo_renaming("allowed")
def expect_guards(
    function: Function, found: Call | Assignment | Binding, *allowed: tuple[str, ...]
) -> tuple[str, ...]:
    """``found`` (a call or assignment of ``function``) runs under exactly one of the
    ``allowed`` lists of ``if`` guards (normalised, outermost first): a new ``if`` around
    it, a dropped one, or a changed test is drift. Returns its guards."""
    if any(
        len(found.guards) == len(guards)
        and all(
            equivalent(g, h, _scope(function), boolean=True)
            for g, h in zip(guards, found.guards, strict=True)
        )
        for guards in allowed
    ):
        return found.guards
    what = found.source if isinstance(found, Call) else "/".join(_targets(found))
    expected = " or ".join(
        " and ".join(f"`{g}`" for g in guards) if guards else "no guard" for guards in allowed
    )
    raise drift(
        function,
        f"{function.qualname}: {what} (line {found.line}) now runs under "
        f"{' and '.join(f'`{g}`' for g in found.guards) or 'no guard'}, not {expected}",
    )


def _targets(found: Assignment | Binding) -> tuple[str, ...]:
    return found.targets if isinstance(found, Assignment) else (found.target,)


@modulo_renaming("branches")
def expect_returns_by_branch(function: Function, branches: Mapping[str, str]) -> None:
    """For each ``condition: value`` of ``branches`` (normalised text), ``function`` returns
    ``value`` on a path that requires ``condition`` (its ``if`` tests and the negations of
    earlier exits, see :attr:`canary.codeindex.flow.Return.conditions`), and returns
    nothing else on any path that requires it: swapped branches are drift."""
    returns = function.flow.returns
    scope = _scope(function)
    for condition, value in branches.items():
        under = [r for r in returns if r.requires(condition, scope)]
        if not under or any(
            r.value is None or _same(value, r.value, scope, {}) is None for r in under
        ):
            raise _branches_drift(function, value, condition)


def _branches_drift(function: Function, value: str, condition: str) -> Drift:
    listing = "; ".join(
        f"line {r.line}: {r.value} when {' and '.join(f'`{c}`' for c in r.conditions) or 'always'}"
        for r in function.flow.returns
    )
    return drift(
        function,
        f"{function.qualname} no longer returns {value} exactly when `{condition}`; it "
        f"returns: {listing or 'nothing'}",
    )
