"""When a failed upstream import breaks nothing: the ``except ImportError`` of its ``try``
takes its place, giving every name it binds another value or leaving the block silently.

The proof, for an import directly in a ``try`` body: where the module or name is missing
the import raises ImportError; the first handler that catches it runs. If that handler
binds each of the import's names (to another object: a class, a function, an import from
the new place) the names hold the fallback from then on, and what the project does with
them is checked where it does it (as uses of the fallback); so for the names and attributes
the rest of the body binds, given another object (a local the handler builds it from, read
nowhere else, is no flag; a constant there is a flag: it signals the failure to
a later test, which may raise; a flag whose every test, in every module that names it,
goes on without raising where it is false only picks the branch that does without the
import; a name the body only augments, bound before, keeps the collection it held). If it
leaves by ``return``,
``continue`` or ``break``, nothing after it runs there. Either way the import itself
breaks nothing. Not handled: a handler that raises (a break, loudly), that passes (the
names stay unbound: a NameError one use away), or that binds a name to ``None`` (a use
one module away may still need the object: liger defines its output classes only when
the import gave one, and imports them unguarded elsewhere).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from canary.surface import guards

# why a name left unbound breaks nothing in its block (another module may still import it)
UNREAD = "read only after the import, inside the try body it leaves"

IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


ANY_ERRORS = frozenset({"Exception", "BaseException"})
ATTRIBUTE_ERRORS = frozenset({"AttributeError", "Exception", "BaseException"})


def catches_import_error(handler: ast.ExceptHandler) -> bool:
    """The handler catches the ImportError a failed import raises."""
    return guards.catches(handler, IMPORT_ERRORS)


def swallows_any(node: ast.Try) -> bool:
    """What the body of ``node`` raises ends in a handler that raises nothing: one catches
    any exception (bare, ``Exception``), and neither it nor a handler before it (which may
    be the one that catches) has a ``raise``."""
    for handler in node.handlers:
        if any(isinstance(n, ast.Raise) for n in ast.walk(handler)):
            return False
        if guards.catches(handler, ANY_ERRORS):
            return True
    return False


def catches_attribute_error(handler: ast.ExceptHandler) -> bool:
    """The handler catches the AttributeError a read of a missing attribute raises."""
    return guards.catches(handler, ATTRIBUTE_ERRORS)


def presence_flag(node: ast.Try, attempted: Callable[[ast.stmt], bool]) -> tuple[str, bool] | None:
    """The name a ``try`` sets to a constant after its attempts (the statements
    ``attempted`` says every handler catches the failure of: imports, reads of upstream
    attributes) and to the other constant in every handler (``try: from x import y; HAS_Y
    = True except ImportError: HAS_Y = False``; unsloth_zoo's ``try: m.Qwen3MoeExperts;
    old = False except Exception: old = True``), with the value it holds exactly where
    every attempt succeeded. None: no such flag."""
    if not node.handlers:
        return None
    after_attempts = False
    candidates: dict[str, bool] = {}
    for statement in node.body:
        if attempted(statement):
            after_attempts = True
            continue
        for value in (True, False):
            if after_attempts and (name := _set_to(statement, value)) is not None:
                candidates[name] = value
    found = [
        (name, value)
        for name, value in sorted(candidates.items())
        if all(any(_set_to(s, not value) == name for s in h.body) for h in node.handlers)
    ]
    return found[0] if len(found) == 1 else None


def presence_keys(node: ast.Try) -> list[tuple[str, str]]:
    """The ``(dict, key)`` pairs a ``try`` body sets after its imports (``REG["k"] = v``)
    that no handler sets, every handler catching ImportError: each key is in the dict
    where every import of the body succeeded (and nothing else sets it)."""
    if not node.handlers or not all(catches_import_error(h) for h in node.handlers):
        return []
    after_imports = False
    found = []
    for statement in node.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            after_imports = True
        elif after_imports and (pair := set_key(statement)) is not None:
            found.append(pair)
    handled = {pair for h in node.handlers for s in ast.walk(h) if (pair := set_key(s)) is not None}
    return [pair for pair in found if pair not in handled]


def set_key(node: ast.AST) -> tuple[str, str] | None:
    """``(R, k)`` of ``R["k"] = ...`` (a single target), else None."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return None
    target = node.targets[0]
    if (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and isinstance(target.slice, ast.Constant)
        and isinstance(target.slice.value, str)
    ):
        return target.value.id, target.slice.value
    return None


def _set_to(statement: ast.stmt, value: bool) -> str | None:
    """The name ``statement`` binds to the constant ``value`` (``HAS_Y = True``), if any."""
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and isinstance(statement.value, ast.Constant)
        and statement.value.value is value
    ):
        return statement.targets[0].id
    return None


def _flags(node: ast.Try, kept_from_before: Callable[[str], bool]) -> list[str]:
    """The names the body sets to ``True`` after its imports (in a block of it too: nemo's
    ``if is_flash_attn_2_available(): ...; FLASH_ATTN_AVAILABLE = True``) that every handler
    catching ImportError sets to ``False``, or leaves with the value it had before the
    ``try``."""
    after_imports, candidates = False, set()
    for statement in node.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            after_imports = True
        elif after_imports:
            candidates.update(
                name
                for inner in _shallow([statement])
                if isinstance(inner, ast.stmt) and (name := _set_to(inner, True)) is not None
            )
    handlers = [h for h in node.handlers if catches_import_error(h)]
    return [
        name
        for name in sorted(candidates)
        if all(
            any(_set_to(s, False) == name for s in h.body)
            or (name not in {n for s in h.body for n in _stored(s)} and kept_from_before(name))
            for h in handlers
        )
    ]


def flag_never_raises(tree: ast.AST, name: str) -> bool:
    """Whether every read of the flag ``name`` in ``tree`` (``name`` or ``m.name``) is the
    test of an ``if``/``while``/conditional expression whose branch taken where the flag
    is false holds no ``raise`` (unsloth_zoo's ``elif HAS_HYBRID_CACHE and isinstance(...)``),
    not an ``assert``. A read anywhere else (returned, passed on, stored) may reach a raise
    this cannot see: False, as is ``if not HAS_GLM4_MOE: raise ImportError(...)``."""
    tested: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            reads = [n for n in ast.walk(node.test) if _reads_flag(n, name)]
            if not reads:
                continue
            if not isinstance(node, ast.IfExp):
                side = _taken_where_false(node.test, name)
                blocks = [node.body, node.orelse] if side is None else [side(node)]
                if any(isinstance(n, ast.Raise) for b in blocks for s in b for n in ast.walk(s)):
                    return False
            tested.update(id(n) for n in reads)
        elif isinstance(node, ast.Assert) and any(
            _reads_flag(n, name) for n in ast.walk(node.test)
        ):
            return False
    return all(id(n) in tested for n in ast.walk(tree) if _reads_flag(n, name))


def _reads_flag(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, ast.Load)
    return isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.ctx, ast.Load)


def _taken_where_false(
    test: ast.expr, name: str
) -> Callable[[ast.If | ast.While], list[ast.stmt]] | None:
    """Which block runs where the flag is false: the ``else`` of ``F`` and ``F and x``, the
    body of ``not F`` and ``not F or x`` (None: the test does not say; both may)."""

    def flag(node: ast.expr) -> bool:
        return _reads_flag(node, name)

    def negated(node: ast.expr) -> bool:
        return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and flag(node.operand)

    def orelse(node: ast.If | ast.While) -> list[ast.stmt]:
        return node.orelse

    def body(node: ast.If | ast.While) -> list[ast.stmt]:
        return node.body

    if flag(test) or (
        isinstance(test, ast.BoolOp)
        and isinstance(test.op, ast.And)
        and any(flag(v) for v in test.values)
    ):
        return orelse
    if negated(test) or (
        isinstance(test, ast.BoolOp)
        and isinstance(test.op, ast.Or)
        and any(negated(v) for v in test.values)
    ):
        return body
    return None


def harmless(node: ast.stmt) -> bool:
    """A statement that cannot raise ImportError: ``pass``, names bound to names or
    literals (``AutoModelForVision2Seq = AutoModelForImageTextToText`` after importing the
    latter), a return of names or literals (geoai-vlm's ``return
    AutoModelForImageTextToText``), or a function defined undecorated, its defaults literals
    and its annotations plain names (xinference's ``def model_input_compat`` beside the
    imports it wraps: a definition runs nothing of its body). Beside imports in a ``try``
    body, it leaves their failure the only way into a handler."""
    if isinstance(node, ast.Pass):
        return True
    if isinstance(node, ast.Return):
        return all(isinstance(n, (ast.Name, ast.Constant)) for n in returned(node))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        given = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        parameters = (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
        hints = [p.annotation for p in parameters if p is not None and p.annotation]
        hints += [node.returns] if node.returns is not None else []
        return (
            not node.decorator_list
            and all(isinstance(d, ast.Constant) for d in given)
            and all(
                isinstance(part, _PLAIN_HINT)
                for hint in hints
                for part in ast.walk(hint)
                if isinstance(part, ast.expr)
            )
        )
    if not isinstance(node, ast.Assign):
        return False
    return all(isinstance(t, ast.Name) for t in node.targets) and isinstance(
        node.value, (ast.Name, ast.Constant)
    )


# what an annotation evaluates without running an import: names, literals, subscripts
_PLAIN_HINT = (ast.Name, ast.Constant, ast.Subscript, ast.Tuple, ast.List, ast.BinOp)


def bound_names(node: ast.Import | ast.ImportFrom) -> tuple[str, ...]:
    """The names an import statement binds (``import a.b`` binds ``a``)."""
    return tuple(alias.asname or alias.name.split(".", 1)[0] for alias in node.names)


def returned(node: ast.Return) -> list[ast.expr]:
    """What a ``return`` gives: its value, or a tuple's items (nothing for a bare one)."""
    if node.value is None:
        return []
    return list(node.value.elts) if isinstance(node.value, ast.Tuple) else [node.value]


def handled_imports(
    node: ast.Try,
    none_harmless: Callable[[str], bool] = lambda name: False,
    unbound_harmless: Callable[[str, bool], str] = lambda name, kept: "",
    flag_harmless: Callable[[str], bool] = lambda name: False,
    temporary: Callable[[str, ast.ExceptHandler], bool] = lambda name, handler: False,
) -> dict[int, str]:
    """The imports directly in the ``try`` body whose failure its handler takes the place
    of (by ``id``), each with why (the module docstring's proof). Every handler that may
    catch it must: which one does depends on the error (a missing module or name). A name
    a handler sets to ``None`` counts as given only where ``none_harmless`` says no read of
    it can break on a None (:func:`none_is_harmless`); one it leaves unbound (the
    import's, or one the rest of the body binds) only where ``unbound_harmless`` says why
    that breaks nothing (:func:`unbound_is_harmless`). A handler that binds anything else
    signals the failure (``HAS_GLM4_MOE = False``, read later to raise): not handled; so
    is a name the rest of the body binds that keeps an earlier value (that is the flag),
    unless ``flag_harmless`` says none of its readers raises where it is false
    (:func:`flag_never_raises`): then the flag only chooses the branch that does without.
    A name ``temporary`` says nothing outside the handler reads (:func:`read_only_in`) is
    what the handler builds its fallback from, no flag."""
    handlers = [h for h in node.handlers if catches_import_error(h)]
    if not handlers:
        return {}
    where = f"line {handlers[0].lineno}"
    imports = [n for n in node.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if all(guards.exits(h.body, silently=True) for h in handlers):
        why = f"its ImportError leaves the block silently ({where}): nothing after it runs there"
        return {id(n): why for n in imports}
    if any(isinstance(h.body[-1], ast.Raise) for h in handlers):
        return {}  # raised again: a break, loudly
    own = {name for statement in imports for name in bound_names(statement)}
    body_names = {n for s in node.body if s not in imports for n in _stored(s)}
    body_attributes = {a for s in node.body if s not in imports for a in _stored_attributes(s)}
    flags = {
        name: f"{name}: a flag no reader raises on where the import failed"
        for name in _flags(node, lambda name: bool(unbound_harmless(name, True)))
        if flag_harmless(name)
    }
    taken = (own | set(flags), body_names, body_attributes)
    if any(_signals(h, *taken, temporary) for h in handlers):
        return {}
    given = set.intersection(*({n for n, _ in _given(h.body)} for h in handlers))
    nones = {n for h in handlers for n, none in _given(h.body) if none}
    given -= {n for n in nones if not none_harmless(n)}
    rest = {n for s in node.body if s not in imports for n in _stored(s)} - given
    kept = {name: why for name, why in flags.items() if name in rest}
    rest -= set(flags)
    grown = _only_augmented(node.body, imports)
    for name in sorted(rest):
        # an accumulator (``types += (FlaxPreTrainedModel,)``) keeps what it held before
        kept[name] = unbound_harmless(name, name in grown)
        if not kept[name]:
            return {}  # a name the body binds is left unbound where something may read it
    found = {}
    for statement in imports:
        names = bound_names(statement)
        if any(alias.name == "*" for alias in statement.names):
            continue
        for name in names:
            if name not in given and name not in kept and (why := unbound_harmless(name, True)):
                kept[name] = why
        if not all(name in given or name in kept for name in names):
            continue
        ways = [f"{name}: {kept[name]}" for name in names if name in kept]
        value = "None, read only where a None is tested or caught" if nones & set(names) else ""
        value = value or "another value"
        given_here = [name for name in names if name in given]
        if given_here:
            ways.insert(0, f"it gives {', '.join(given_here)} {value}")
        found[id(statement)] = f"its ImportError is handled ({where}): {'; '.join(ways)}"
    return found


def unbound_is_harmless(
    block: Block,
    name: str,
    origin: ast.Try,
    *,
    kept: bool,
) -> str:
    """Why ``name``, left as it was where the body of ``origin`` (a statement of
    ``block``) stops at a failed import, breaks nothing there: nothing in the block outside
    that body names it; or (where ``kept`` may be) the block bound it before, on every
    path, to something other than ``None`` ("": it may be read unbound or None). The text
    is looked at first: a name it does not show outside the body is read nowhere there."""
    first, last = origin.body[0].lineno, origin.body[-1].end_lineno or origin.body[-1].lineno
    word = name.encode()
    outside = [
        number
        for number in (*range(block.low, first), *range(last + 1, block.high + 1))
        if word in block.lines[number - 1]
    ]
    if not outside:
        return UNREAD
    statements = block.statements()
    if kept and outside[0] < origin.lineno and (why := _kept_value(block, name, origin)):
        return why  # what reads it, here or in a module that imports it, reads that value
    shown = set(outside)
    if not any(  # the text shows it outside only in strings or comments
        isinstance(node, ast.Name)
        and node.id == name
        and isinstance(node.ctx, ast.Load)
        and not first <= node.lineno <= last
        for statement in statements
        if shown.intersection(range(statement.lineno, (statement.end_lineno or 0) + 1))
        for node in ast.walk(statement)
    ):
        return UNREAD
    return ""


def _kept_value(block: Block, name: str, origin: ast.Try) -> str:
    """Why ``name`` holds a value other than ``None`` where ``origin`` starts: the last
    statement of ``block`` before it that binds the name does so at its top level."""
    statements = block.statements()
    word = name.encode()
    nearer = [
        statement
        for statement in statements
        if statement.lineno < origin.lineno
        and any(word in line for line in block.lines[statement.lineno - 1 : statement.end_lineno])
    ]
    # ``x += ...`` grows what x held, never unbinds it: the binding before it decides
    grown = {id(n.target) for s in nearer for n in ast.walk(s) if isinstance(n, ast.AugAssign)}
    before = [
        node.lineno
        for statement in nearer
        for node in ast.walk(statement)
        if name in _stored_by(node) and id(node) not in grown
    ]
    if before:
        line = max(before)
        top = next((s for s in statements if s.lineno == line), None)
        if top is not None and name in {n for n, none in _given([top]) if not none}:
            return f"it keeps the value line {line} gave it"
    return ""


@dataclass(frozen=True)
class Block:
    """A function's body or a module, as :func:`unbound_is_harmless` reads it: the lines
    of its file, its first and last line, and (parsed only when the text does not decide)
    its statements."""

    lines: Sequence[bytes]
    low: int
    high: int
    statements: Callable[[], Sequence[ast.stmt]]


def _stored_by(node: ast.AST) -> tuple[str, ...]:
    """The names one node binds."""
    if isinstance(node, ast.Name):
        return () if isinstance(node.ctx, ast.Load) else (node.id,)
    if isinstance(node, _DEFINITIONS):
        return (node.name,)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return bound_names(node)
    return ()


def _signals(
    handler: ast.ExceptHandler,
    own: set[str],
    body_names: set[str],
    body_attributes: set[str],
    temporary: Callable[[str, ast.ExceptHandler], bool],
) -> bool:
    """A handler's block binds or sets something besides the import's own names (what a
    class or function it defines does inside is no binding of the block's; an import binds
    what the fallback is built from, a module or an object, never a flag). Giving a name
    or an attribute the rest of the ``try`` body binds another object (``KwargsForCausalLM =
    TransformersKwargs``; megatron-bridge's ``self.embed_audio = _SimpleAudioEmbedder(...)``
    for the body's ``Gemma4AudioEmbedder(...)``) takes that body's place, as for the
    import's names; a constant there (``HAS_X = False``) is the flag a later test reads, so
    it still signals. A temporary (a local nothing outside the handler reads) is no flag."""
    kept = [
        s
        for s in handler.body
        if not _replaces_body_name(s, body_names)
        and not _replaces_body_attribute(s, body_attributes)
    ]
    for node in _shallow(kept):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
            return True
        if (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Store)
            and node.id not in own
            and not temporary(node.id, handler)
        ):
            return True
        if isinstance(node, _DEFINITIONS) and node.name not in own:
            return True
    return False  # its imports bind what it is built from (easydel's hashlib): no flag


def _replaces_body_name(statement: ast.stmt, body_names: set[str]) -> bool:
    """``name = value`` for names the ``try`` body binds, ``value`` no constant but
    ``None`` (a missing object, judged as the import's own ``None`` fallbacks are: nemo's
    ``_flash_attention_forward = None``, read under ``is None``)."""
    return (
        isinstance(statement, ast.Assign)
        and (not isinstance(statement.value, ast.Constant) or statement.value.value is None)
        and all(isinstance(t, ast.Name) and t.id in body_names for t in statement.targets)
    )


def _replaces_body_attribute(statement: ast.stmt, body_attributes: set[str]) -> bool:
    """``x.a = value`` for attributes the ``try`` body sets (by their text), ``value`` no
    constant: another object in the body's place (a constant would be a flag)."""
    return (
        isinstance(statement, ast.Assign)
        and not isinstance(statement.value, ast.Constant)
        and all(
            isinstance(t, ast.Attribute) and ast.unparse(t) in body_attributes
            for t in statement.targets
        )
    )


def _stored_attributes(statement: ast.stmt) -> Iterator[str]:
    """The attributes a statement of a ``try`` body sets (``self.embed = ...``), by text."""
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            if isinstance(target, ast.Attribute):
                yield ast.unparse(target)


def read_only_in(
    function: ast.FunctionDef | ast.AsyncFunctionDef, handler: ast.ExceptHandler, name: str
) -> bool:
    """Whether nothing in ``function`` outside ``handler`` reads ``name`` (a nested
    function's reads count: it may run later): a temporary of the handler's."""
    low, high = handler.lineno, handler.end_lineno or handler.lineno
    return not any(
        isinstance(node, ast.Name)
        and node.id == name
        and isinstance(node.ctx, ast.Load)
        and not low <= node.lineno <= high
        for node in ast.walk(function)
    )


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _shallow(body: Sequence[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of a block, a definition's own body left out."""
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, (*_DEFINITIONS, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))


def _only_augmented(body: Sequence[ast.stmt], imports: Sequence[ast.stmt]) -> set[str]:
    """The names the body besides ``imports`` binds only by augmenting them (``x += ...``,
    a statement of its own): where the body stops at a failed import, each keeps the value
    it had before, an accumulator without the item, never a flag's other meaning."""
    augmented = {
        s.target.id for s in body if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name)
    }
    bound = {
        name
        for s in body
        if s not in imports and not isinstance(s, ast.AugAssign)
        for name in _stored(s)
    }
    return augmented - bound


def _stored(statement: ast.stmt) -> Iterator[str]:
    """The names a statement binds, anywhere in it (a nested function's own too: more
    names only ever make the caller more careful)."""
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from bound_names(node)


def _given(body: Sequence[ast.stmt]) -> Iterator[tuple[str, bool]]:
    """The names a handler's block binds on every path through it (its own top-level
    statements; a nested block may not run, but a nested ``try`` whose body and every
    handler that goes on bind a name binds it: unsloth's second spelling of ``VLMS``, or
    ``return``), each with whether to ``None``."""
    if body and isinstance(body[-1], ast.Raise):
        return  # it raises: nothing it binds outlives it
    for statement in body:
        if isinstance(statement, ast.Try) and not statement.orelse and not statement.finalbody:
            yield from _given_by_try(statement)
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield statement.name, False
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            yield from ((name, False) for name in bound_names(statement))
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                yield from _given_by(target, statement.value)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            yield from _given_by(statement.target, statement.value)


def binds_none(body: Sequence[ast.stmt], name: str) -> bool:
    """A handler's block binds ``name`` to None, once, at its top level, and nothing else
    in it binds the name: where it went on, the name is None."""
    given = [none for bound, none in _given(body) if bound == name]
    stores = [bound for statement in body for bound in _stored(statement) if bound == name]
    return given == [True] and len(stores) == 1


def _given_by_try(statement: ast.Try) -> Iterator[tuple[str, bool]]:
    """The names a nested ``try`` binds wherever what follows it runs: its body binds them
    (its last statement reached means every one ran), and each handler either binds them
    too or leaves (``return``/``continue``/``break``: nothing after it runs). A handler of
    a body of imports alone that raises runs only where one of those imports failed: a
    miss of that second spelling's own, found at its site (backpropagate's ``from
    trl.experimental.orpo import ORPOConfig``, raising where neither spelling is there)."""
    found = dict(_given(statement.body))
    imports_only = all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in statement.body)
    for handler in statement.handlers:
        if guards.exits(handler.body, silently=True):
            continue
        if imports_only and handler.body and isinstance(handler.body[-1], ast.Raise):
            continue
        given = dict(_given(handler.body))
        found = {n: none or given[n] for n, none in found.items() if n in given}
    yield from found.items()


def _given_by(target: ast.expr, value: ast.expr) -> Iterator[tuple[str, bool]]:
    """The names ``target = value`` binds, each with whether to ``None`` (an unpacked
    value that is no display may hold a None: nothing is known of its parts)."""
    if isinstance(target, ast.Name):
        yield target.id, _is_none(value)
    elif (
        isinstance(target, (ast.Tuple, ast.List))
        and isinstance(value, (ast.Tuple, ast.List))
        and len(target.elts) == len(value.elts)
    ):
        for part, given in zip(target.elts, value.elts, strict=True):
            yield from _given_by(part, given)


def _is_none(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value is None


# Handlers that catch what reading a None raises (TypeError, AttributeError): a read of a
# None fallback inside their ``try`` is absorbed there.
_CATCHES_NONE = frozenset({"TypeError", "AttributeError", "Exception", "BaseException"})


def none_is_harmless(naming: Sequence[ast.stmt], name: str, origin: ast.Try) -> bool:
    """Whether ``name``, set to ``None`` by the handler of ``origin`` (a module-level
    ``try``), is read nowhere in its module (``naming``: its statements whose text names
    it) where a None can break: each read is in the
    test of ``if name`` / ``if name is not None`` or under one, inside a ``try`` whose
    handler catches TypeError/AttributeError, or a type hint (autoawq's ``def
    fuse_layers(model: OldExaoneForCausalLM)``); and a block under such a test at module
    level binds nothing (liger binds its output classes there: a None one module away).
    Reads from other modules are the caller's to rule out."""
    return all(
        _reads_harmless(statement, name, gated=False, module_level=True)
        for statement in naming
        if statement.lineno != origin.lineno
    )


def declared_outside(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """``global name`` / ``nonlocal name`` in ``function``: no local of its own, so code
    elsewhere reads it too."""
    return any(
        isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names
        for node in ast.walk(function)
    )


def none_is_local_and_harmless(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """:func:`none_is_harmless` for a ``try`` inside ``function``: ``name`` is its local
    (no ``global``/``nonlocal`` declares it), so its reads are all in its body (outlines'
    ``except ImportError: FlaxPreTrainedModel = None``, read under ``is not None``)."""
    if declared_outside(function, name):
        return False
    return all(
        _reads_harmless(statement, name, gated=False, module_level=False)
        for statement in function.body  # origin's own handler only stores the None
    )


def _reads_harmless(  # noqa: PLR0911 - one return per form of block
    node: ast.AST, name: str, *, gated: bool, module_level: bool
) -> bool:
    if isinstance(node, ast.Name):
        return node.id != name or not isinstance(node.ctx, ast.Load) or gated
    if isinstance(node, ast.Assert) and any(
        isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.test)
    ):
        return False  # `assert name is not None`: the None raises
    if _tests_none(node, name):
        return True  # `name is None`, `not name`: asking is no use of a None
    if isinstance(node, (ast.If, ast.IfExp)):
        return _branches_harmless(node, name, gated=gated, module_level=module_level)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        for value in node.values:
            if not _reads_harmless(value, name, gated=gated, module_level=module_level):
                return False
            gated = gated or any(n.id == name for n in guards.names_not_none(value))
        return True
    if isinstance(node, ast.Try) and any(_catches_none(h) for h in node.handlers):
        body = _all_harmless(node.body, name, gated=True, module_level=module_level)
        rest = [*node.handlers, *node.orelse, *node.finalbody]
        return body and _all_harmless(rest, name, gated=gated, module_level=module_level)
    if isinstance(node, (ast.arg, ast.AnnAssign)) and node.annotation is not None:
        rest = [] if isinstance(node, ast.arg) else [node.target, *filter(None, [node.value])]
        return _annotation_harmless(node.annotation, name) and _all_harmless(
            rest, name, gated=gated, module_level=module_level
        )
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
        others = [n for n in ast.iter_child_nodes(node) if n is not node.returns]
        return _annotation_harmless(node.returns, name) and _all_harmless(
            others, name, gated=gated, module_level=False
        )
    inner = module_level and not isinstance(
        node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    )
    return _all_harmless(ast.iter_child_nodes(node), name, gated=gated, module_level=inner)


def _branches_harmless(
    node: ast.If | ast.IfExp, name: str, *, gated: bool, module_level: bool
) -> bool:
    """A test of the name gates the branch where it says the name is not None; the other
    branch, where it may be None, must not raise (``if name is None: raise ...``)."""
    tested = any(n.id == name for n in guards.names_not_none(node.test))
    if isinstance(node, ast.IfExp):
        return (
            _reads_harmless(node.test, name, gated=gated or tested, module_level=module_level)
            and _reads_harmless(node.body, name, gated=gated or tested, module_level=module_level)
            and _reads_harmless(node.orelse, name, gated=gated, module_level=module_level)
        )
    if tested and module_level and _binds(node.body):
        return False
    untested = any(n.id == name for n in guards.names_not_none(node.test, positive=False))
    if (untested and _raises(node.body)) or (tested and _raises(node.orelse)):
        return False
    return (
        _reads_harmless(node.test, name, gated=gated or tested, module_level=module_level)
        and _all_harmless(node.body, name, gated=gated or tested, module_level=module_level)
        and _all_harmless(node.orelse, name, gated=gated, module_level=module_level)
    )


def _raises(body: Sequence[ast.stmt]) -> bool:
    """The block holds a ``raise`` of its own (not one of a function it defines)."""
    return any(isinstance(node, ast.Raise) for node in _shallow(list(body)))


def _tests_none(node: ast.AST, name: str) -> bool:
    """``name is None`` / ``name is not None`` / ``not name``: a question a None answers."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return isinstance(node.operand, ast.Name) and node.operand.id == name
    return (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], (ast.Is, ast.IsNot))
        and isinstance(node.left, ast.Name)
        and node.left.id == name
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value is None
    )


def _annotation_harmless(annotation: ast.expr, name: str) -> bool:
    """A None read as a type hint is one (``def f(m: X)``, ``List[Tuple[str, X]]``), except
    joined with ``|`` (``None | int`` raises)."""
    return not any(
        isinstance(part, ast.BinOp)
        and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(part))
        for part in ast.walk(annotation)
    )


def _all_harmless(nodes: Iterable[ast.AST], name: str, *, gated: bool, module_level: bool) -> bool:
    """Each node's reads harmless, in order: past ``if name is None: return`` (a block that
    always leaves, where the test failing says the name is not None) the rest is gated
    (nemo's ``if not FLASH or _flash_attention_forward is None: return ...``)."""
    for node in nodes:
        if not _reads_harmless(node, name, gated=gated, module_level=module_level):
            return False
        if (
            isinstance(node, ast.If)
            and not node.orelse
            and guards.exits(node.body)
            and any(n.id == name for n in guards.names_not_none(node.test, positive=False))
        ):
            gated = True
    return True


def _catches_none(handler: ast.ExceptHandler) -> bool:
    return guards.catches(handler, _CATCHES_NONE)


def _binds(body: Sequence[ast.stmt]) -> bool:
    """A module-level block binds a name the rest of the project may import."""
    return any(
        isinstance(
            node,
            (
                ast.FunctionDef,
                ast.AsyncFunctionDef,
                ast.ClassDef,
                ast.Assign,
                ast.AnnAssign,
                ast.Import,
                ast.ImportFrom,
            ),
        )
        for statement in body
        for node in ast.walk(statement)
    )
