"""Where the project names its own module-level functions: a site inside one runs only after
some place that names it ran, so it takes, once per such place, that place's conditions.

The project reaches its own function through the places its code names it. When every one
of those places runs under a condition (a version window, a presence test before it, an
upstream import its function made first, the ``except ImportError`` of an import), the
function's body runs only where one of those conditions holds; they are facts of the
release, as true when the function is called later as when it was named (a callback
registered under ``if hasattr(x, "n"):`` is registered only where ``x.n`` is there). So each
site inside it becomes one copy per place that names it, with that place's conditions added,
exactly as :mod:`canary.surface.importers` does for a module imported only under conditions.
A place inside another such function takes that function's conditions too.

A static method of a module-level class (``@staticmethod``, its only decorator) is one
too, named ``C.m``: its places are ``C.m`` in its module and ``self.m``/``cls.m`` in a
method of ``C`` itself (unsloth's ``FastSentenceTransformer._patch_distilbert_v5()``, in
the ``elif`` a version test leaves to 5.x). A name through anything else (an instance
canary cannot type, a subclass's ``self``) is an occurrence no place accounts for.

A private function (``_f``, by Python's convention its module's own) has no other way in. A
public one may also be called by code outside the project, anywhere: it keeps one more copy,
as it was but *undecided*, so where only that copy runs (auto-round's
``disable_moe_conversion_mapping``, which auto-round calls only under its v5 helper) its
findings are possible, never counted: no caller the project holds is proven to run there.

What leaves a function as it is (its sites run wherever it is called, as before), each a way
in canary cannot see all of:

- its name is a dunder (Python calls it), or it is decorated (a decorator may register it)
  by anything but registrations under model types: ``@register_loader("qwen3_5_moe")`` is
  a way in recorded at the name it defines, with the types it files the function under
  (``Site.registered``: where the release has none of them, its findings are possible);
- a place names it that the walk did not record with its conditions: in a string or a
  comment, in a function extraction skipped (one that names nothing upstream, nor a
  function of its module that does), under
  another name (``import f as g``), as an attribute canary could not resolve; every
  occurrence of the name in the project's text must be its definition, an import that binds
  it as it is, its module's ``__all__`` (the public way in, kept above), prose (a comment or
  a docstring), or a recorded place;
- some place that names it runs under no condition, or there are more than
  :data:`MAX_CONTEXTS` of them.

A place inside the function itself (recursion) is no way in: it runs only once the function
already did. Functions that name each other round a cycle are read together, as
:mod:`canary.surface.importers` reads an import cycle: one of them runs first through a way
in from outside the cycle, so the places round it add only what those bring.

A call in a ``try`` whose handlers swallow any exception (one catches it, bare or
``Exception``, and neither it nor one before it raises) is a way in where what fails inside
the function fails into that handler: its copies are guarded, as a site in a ``try`` of its
own is (auto-round's ``_rebuild_gemma4_attention_mask``, called in ``try: ... except
Exception: pass``). Only a call there is: a callback registered in the ``try``, or a
function defined in it, runs later, outside it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple, Protocol, TypeVar

from canary.surface.cycles import least_fixed_point, on_cycles
from canary.surface.importers import Context, Load, Sited, conditioned, copies, final

MAX_CONTEXTS = 16  # more ways in than this: left as it is

Function = tuple[str, str]  # (dotted module, name) of a module-level function, or "C.m"
Prose = Callable[[str, int, int], bool]  # (path, line, byte column) in a comment or docstring


class Role(str, enum.Enum):
    """What a place that names a function does with it."""

    NAMES = "names"  # reads it (a call, a callback, a value): a way in, with its conditions
    BINDS = "binds"  # ``from m import _f``: binds it under its own name elsewhere; no way in
    RENAMES = "renames"  # ``from m import _f as g``: canary cannot count the ways in
    EXPORTS = "exports"  # listed in its module's ``__all__``: the public way in, no other

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Mention:
    """A place in the project's code that names one of its module-level functions, with the
    conditions of the place."""

    function: Function
    role: Role
    path: str
    line: int
    column: int  # where the name starts, in bytes (0-based, as ``ast`` counts)
    within: str = ""  # the module-level function of ``path`` it lies in ("": none)
    versions: tuple[tuple[str, str], ...] = ()
    after: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    undecided: str = ""
    fallback_of: tuple[str, ...] = ()
    lacks: tuple[str, ...] = ()
    registered: tuple[str, ...] = ()  # a registration under these model types (the function's)
    caught: bool = False  # called in a try whose handlers swallow any exception

    @property
    def context(self) -> Context:
        return replace(Context.of(self), caught=self.caught)


class Within(Protocol):
    """A place in a file, with the module-level function it lies in."""

    path: str
    within: str


class WithinSite(Sited, Within, Protocol):
    """A site of a use, with the module-level function it lies in."""


U = TypeVar("U", bound=WithinSite)
P = TypeVar("P", bound=Within)


def carry(
    uses: Sequence[U],
    loads: Sequence[Load],
    mentions: Iterable[Mention],
    module_of: Mapping[str, str],
    text: Callable[[str], bytes],
    *,
    prose: Prose = lambda path, line, column: False,
) -> tuple[list[U], list[Load]]:
    """``uses``, and ``loads`` (imports of the project's modules), with each one inside a
    function the project reaches only under conditions copied once per place that names it
    (``module_of``: each project file's dotted module; ``text``: a project file's bytes;
    ``prose``: whether a place in a file is in a comment or a docstring). An import inside
    such a function runs only where a way into it does, and so does the module it loads."""
    ways = _Ways(mentions, module_of, text, prose)
    return _copied(uses, ways, copies), _copied(loads, ways, conditioned)


def _copied(
    places: Sequence[P],
    ways: _Ways,
    copy: Callable[[P, Sequence[Context] | None], list[P]],
) -> list[P]:
    """``places``, each inside a function reached only under conditions copied by ``copy``
    once per way into that function."""
    found: list[P] = []
    for place in places:
        module = ways.module_of.get(place.path)
        contexts = ways.contexts((module, place.within)) if module and place.within else ()
        found.extend(copy(place, contexts))
    return found


class _Ways:
    """The places that name each function, and whether they are all of them."""

    def __init__(
        self,
        mentions: Iterable[Mention],
        module_of: Mapping[str, str],
        text: Callable[[str], bytes],
        prose: Prose,
    ) -> None:
        self.prose = prose
        self.by_function: dict[Function, list[Mention]] = {}
        self.spots: dict[str, set[tuple[str, int, int]]] = {}  # name -> every recorded place
        for mention in mentions:
            self.by_function.setdefault(mention.function, []).append(mention)
            self.spots.setdefault(_bare(mention.function[1]), set()).add(
                (mention.path, mention.line, mention.column)
            )
        self.path_of = {module: path for path, module in module_of.items()}
        self.module_of = module_of
        self.text = text
        self._contexts: dict[Function, tuple[Context, ...] | None] = {}
        self._cycles: dict[Function, frozenset[Function]] | None = None
        self._cycle_reads: dict[
            frozenset[Function], dict[Function, tuple[Context, ...] | None]
        ] = {}
        self._ways: dict[Function, list[Mention] | None] = {}
        self._accounted: dict[str, bool] = {}
        self._defined: dict[str, int] = {}  # name -> how many definitions the text has
        self._words: dict[str, frozenset[bytes]] | None = None  # path -> its ``_`` words

    def contexts(self, function: Function) -> tuple[Context, ...]:
        """The conditions of each way into ``function`` (): it runs wherever called)."""
        if function not in self._contexts:
            self._contexts[function] = self._read(function)
        return self._contexts[function] or ()

    def _read(self, function: Function) -> tuple[Context, ...] | None:
        if self._ways_in(function) is None:
            return None
        cycle = self._cyclic().get(function)
        if cycle is not None:
            return self._read_cycle(cycle).get(function)
        found = self._found(function, {})
        if final(found, MAX_CONTEXTS) is None:
            return None
        outside = self._outside(function)
        if outside is None:
            return None
        return tuple(sorted(found | outside, key=repr))

    def _found(self, function: Function, cycle: Mapping[Function, set[Context]]) -> set[Context]:
        """The conditions of the places that name ``function``: each place's own, and those
        of the function it lies in (one of ``cycle``: as known so far)."""
        found: set[Context] = set()
        for mention in self._ways_in(function) or ():
            if not mention.within:
                found.add(mention.context)
                continue
            outer = (self.module_of.get(mention.path, ""), mention.within)
            if outer in cycle:
                around: Iterable[Context] = cycle[outer]
            else:
                around = self.contexts(outer) or (Context(),)
            found.update(mention.context & context for context in around)
        return found

    def _outside(self, function: Function) -> set[Context] | None:
        """The ways in canary does not see: none (an empty set), one undecided (a public
        function code outside the project may call), or any (None: a place names it that
        is not recorded). Last, as it reads every file's text; a static method must be its
        name's one definition: another class's ``m`` may be what ``self.m`` finds."""
        qualified = function[1]
        name = _bare(qualified)  # a static method's own name (``C._m``: ``_m``)
        if not self._all_recorded(name) or (qualified != name and self._defined[name] != 1):
            return None
        if not private(name):
            outside = f"{qualified}() is public: code outside the project may call it"
            return {Context(undecided=outside)}
        return set()

    def _read_cycle(self, cycle: frozenset[Function]) -> dict[Function, tuple[Context, ...] | None]:
        """The functions of a cycle of functions naming each other, read together: one of
        them runs first through a way in from outside the cycle (a place outside it, or one
        canary does not see), so the places round it add only what those bring (the least
        fixed point). Too many ways in: each left as it is."""
        if cycle not in self._cycle_reads:
            found = least_fixed_point(cycle, self._seen_from_outside, self._found, MAX_CONTEXTS)
            self._cycle_reads[cycle] = (
                dict.fromkeys(cycle)
                if found is None
                else {function: final(found[function], MAX_CONTEXTS) for function in cycle}
            )
        return self._cycle_reads[cycle]

    def _seen_from_outside(self, function: Function) -> set[Context]:
        """The ways into a function of a cycle canary does not see, as conditions: any (a
        place not recorded) is one under no condition."""
        outside = self._outside(function)
        return {Context()} if outside is None else outside

    def _ways_in(self, function: Function) -> list[Mention] | None:
        """The places that name ``function`` and may call it (None: canary cannot count
        them, and it runs wherever called); read once: a cycle's are read on every round."""
        if function not in self._ways:
            self._ways[function] = self._read_ways_in(function)
        return self._ways[function]

    def _read_ways_in(self, function: Function) -> list[Mention] | None:
        module, qualified = function
        if not carried(_bare(qualified)) or module not in self.path_of:
            return None
        mentions = [
            m
            for m in self.by_function.get(function, ())
            if (self.module_of.get(m.path), m.within) != function  # recursion: no way in
        ]
        if not mentions or any(m.role is Role.RENAMES for m in mentions):
            return None
        return [m for m in mentions if m.role not in (Role.BINDS, Role.EXPORTS)]

    def _cyclic(self) -> dict[Function, frozenset[Function]]:
        """The functions on a cycle of functions naming each other, each with its cycle's:
        read together, so the same whichever function the reading starts from."""
        if self._cycles is None:
            self._cycles = on_cycles(sorted(self.by_function), self._callers)
        return self._cycles

    def _callers(self, function: Function) -> list[Function]:
        return [
            (self.module_of.get(m.path, ""), m.within)
            for m in self._ways_in(function) or ()
            if m.within
        ]

    def _all_recorded(self, name: str) -> bool:
        """Every occurrence of ``name`` in the project's text is a recorded place or a
        definition of a function of that name: at a module's level, not decorated, or a
        static method's."""
        if name in self._accounted:
            return self._accounted[name]
        spots = self.spots.get(name, set())
        word = name.encode()
        accounted, defined = True, 0
        if self._words is None:
            # one scan of every file for the words that start with "_" (a superset of the
            # identifiers that do) beats one scan per name: unsloth's text is 37 MB
            self._words = {p: frozenset(_WORD.findall(self.text(p))) for p in self.module_of}
        for path, words in self._words.items():
            # a public name is sought in the text itself: few are asked, and only last
            if word not in words if private(name) else word not in self.text(path):
                continue
            source = self.text(path)
            lines: list[bytes] | None = None
            for line, column, _ in occurrences(source, word):
                if (path, line, column) in spots:
                    continue
                lines = lines if lines is not None else source.splitlines()
                if self.prose(path, line, column):
                    continue
                if not _a_definition(lines, line - 1, word):
                    accounted = False
                    break
                defined += 1
            if not accounted:
                break
        self._accounted[name] = accounted
        self._defined[name] = defined
        return accounted


def private(name: str) -> bool:
    """A module-level function's name the convention makes its module's own."""
    return name.startswith("_") and carried(name)


def carried(name: str) -> bool:
    """A module-level function's name whose ways in are counted: not a dunder, which
    Python itself calls (``__getattr__``)."""
    return not (name.startswith("__") and name.endswith("__"))


# Bytes that continue an identifier, as ``\w`` reads bytes (ASCII): a byte of a non-ASCII
# character beside a name leaves it an occurrence, which can only keep a function open.
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class Occurrence(NamedTuple):
    """Where a word stands in a file: 1-based line, byte column, byte offset."""

    line: int
    column: int
    at: int


def occurrences(source: bytes, word: bytes) -> Iterator[Occurrence]:
    """Where ``word`` stands as a whole identifier (``m._f`` included): found by
    ``bytes.find``, many times faster than a pattern with look-arounds on 2 MB files."""
    line, counted = 1, 0
    at = source.find(word)
    while at != -1:
        end = at + len(word)
        if (at == 0 or source[at - 1] not in _WORD_BYTES) and (
            end == len(source) or source[end] not in _WORD_BYTES
        ):
            line += source.count(b"\n", counted, at)  # counted on from the last one
            counted = at
            yield Occurrence(line, at - (source.rfind(b"\n", 0, at) + 1), at)
        at = source.find(word, end)


_WORD = re.compile(rb"_\w+")
# a ``def`` line, from its start: group 1 is the name it defines
DEFINITION = re.compile(rb"(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(")


def _a_definition(lines: list[bytes], index: int, name: bytes) -> bool:
    """Line ``index`` defines ``name`` at a module's level (no indentation) and the line
    before it is no decorator, or defines it indented right after ``@staticmethod``."""
    line = lines[index]
    indent = len(line) - len(line.lstrip(b" \t"))
    match = DEFINITION.match(line, indent)
    if match is None or match.group(1) != name:
        return False
    before = index - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    if indent:
        return before >= 0 and lines[before].strip() == b"@staticmethod"
    return before < 0 or not lines[before].startswith(b"@")


def _bare(name: str) -> str:
    """A function's own name: a module-level one's, or a static method's (``C._m``)."""
    return name.rpartition(".")[2]
