"""Expectations that hold modulo a consistent renaming of the function's locals: a local the
check names that the function no longer has may stand for one of its locals, one to one.

A local's name is the function's own business (nothing outside can read it), so
``loss_kwargs`` renamed ``forward_kwargs`` everywhere it appears (binding targets, guards,
the call it flows into) changes nothing a fix relies on. Parameters are never renamed
(callers pass them by name), nor attributes or globals: a renamed *parameter* stays drift.
"""

from __future__ import annotations

import functools
import inspect
import io
import itertools
import keyword
import tokenize
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from canary.codeindex import Function
from canary.errors import Drift

F = TypeVar("F", bound=Callable[..., Any])

# At most this many of the check's names stand for renamed locals, and this many renamings
# are tried: a real rename touches one or two names an expectation uses.
_MOST_RENAMED = 2
_MOST_TRIED = 400


def modulo_renaming(*fields: str) -> Callable[[F], F]:
    """Decorate an expectation whose first argument is a :class:`Function` and whose
    ``fields`` hold expression text (a string, strings, or a mapping of them): when it
    raises Drift and some names in those fields are none of the function's (not bound, read
    or a parameter), it is tried again with them renamed to the function's locals the fields
    do not name, one to one; the first renaming under which it holds is its answer, else the
    first Drift stands."""

    def decorate(expectation: F) -> F:
        signature = inspect.signature(expectation)

        @functools.wraps(expectation)
        def wrapper(function: Function, *args: Any, **kwargs: Any) -> Any:
            try:
                return expectation(function, *args, **kwargs)
            except Drift:
                given = signature.bind(function, *args, **kwargs)
                for mapping in _renamings(function, [given.arguments.get(f) for f in fields]):
                    renamed = signature.bind(function, *args, **kwargs)
                    for field in fields:
                        if field in renamed.arguments:
                            renamed.arguments[field] = _rename(renamed.arguments[field], mapping)
                    try:
                        return expectation(*renamed.args, **renamed.kwargs)
                    except Drift:
                        continue
                raise

        return wrapper  # type: ignore[return-value]

    return decorate


def _texts(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _texts(key)
            yield from _texts(item)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _texts(item)


def _renamings(function: Function, values: list[object]) -> Iterator[dict[str, str]]:
    named = {name for value in values for text in _texts(value) for name in _names(text)}
    scope = function.scope
    # a module imported under an alias is known by its own name too
    modules = {m.split(".")[0] for m in function.deferred_scope.context.aliases.values()}
    unknown = sorted(named - scope.known - modules)
    if not unknown or len(unknown) > _MOST_RENAMED:
        return
    candidates = sorted(scope.locals - named)
    chosen = itertools.permutations(candidates, len(unknown))
    for picked in itertools.islice(chosen, _MOST_TRIED):
        yield dict(zip(unknown, picked, strict=True))


def _rename(value: object, mapping: Mapping[str, str]) -> object:
    if isinstance(value, str):
        return _renamed_text(value, mapping)
    if isinstance(value, Mapping):
        return {_rename(k, mapping): _rename(v, mapping) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_rename(v, mapping) for v in value)
    return value


@functools.lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[tokenize.TokenInfo, ...] | None:
    try:
        return tuple(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None


def _names(text: str) -> set[str]:
    """The plain names ``text`` reads (not attributes, keywords or strings)."""
    tokens = _tokens(text)
    if tokens is None:
        return set()
    return {
        t.string for i, t in enumerate(tokens) if t.type == tokenize.NAME and _is_name(tokens, i)
    }


def _is_name(tokens: tuple[tokenize.TokenInfo, ...], index: int) -> bool:
    token = tokens[index]
    if keyword.iskeyword(token.string):
        return False
    before = tokens[index - 1] if index else None
    after = tokens[index + 1] if index + 1 < len(tokens) else None
    if before is not None and before.string == ".":
        return False  # an attribute
    # a keyword argument's name (f(x=...)), not ``==``
    return not (
        after is not None
        and after.string == "="
        and before is not None
        and before.string in ("(", ",")
    )


def _renamed_text(text: str, mapping: Mapping[str, str]) -> str:
    tokens = _tokens(text)
    if tokens is None or "\n" in text.strip():
        return text
    out = text
    for index in reversed(range(len(tokens))):
        token = tokens[index]
        if token.type == tokenize.NAME and token.string in mapping and _is_name(tokens, index):
            start, end = token.start[1], token.end[1]
            out = out[:start] + mapping[token.string] + out[end:]
    return out
