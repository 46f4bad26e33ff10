"""Whether an anchor still applies to upstream source, matched as the project matches it.

A project rewrites upstream code with ``inspect.getsource(f).replace(old, new)`` (or tests
``old in source``, or ``re.sub``): when ``old`` is gone the patch silently does nothing.
``.replace`` is exact, so an anchor found only after collapsing whitespace is a miss (the
reason says so, since that is the usual cause: upstream reformatted); a regex is searched
as a regex. A miss also says where no spelling of the text is left at all (none of the
names it mentions is anywhere in the source), which decides nothing alone but matters to a
deletion.
"""

from __future__ import annotations

import keyword
import re
import textwrap

from canary.surface.model import TEXT_GONE, Match, Outcome

try:
    from re import _parser  # Python 3.11+
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _parser  # type: ignore[no-redef]

# What a pattern may need that a Reference does not record: a regex that finds nothing
# as written but matches with these flags cannot be decided (the project may pass them).
_UNRECORDED_FLAGS = re.MULTILINE | re.DOTALL
_WHITESPACE = re.compile(r"\s+")


def getsource_text(definition: str) -> str:
    """What ``inspect.getsource`` returns for a definition whose exact text is
    ``definition`` (whole lines from its first decorator; the code index keeps no final
    newline, inspect keeps the last line's)."""
    return definition if definition.endswith("\n") else definition + "\n"


def anchor_outcome(source: str, anchor: str, match: Match) -> tuple[Outcome, str]:
    """Whether ``anchor`` applies to ``source`` (the text ``inspect.getsource`` gives) the
    way ``match`` says the project applies it, and why not."""
    dedented = match in (Match.DEDENTED, Match.REGEX_DEDENTED)
    text = textwrap.dedent(source) if dedented else source
    if match in (Match.REGEX, Match.REGEX_DEDENTED):
        return _regex_outcome(text, anchor)
    if anchor in text:
        return Outcome.OK, ""
    return Outcome.MISSING, _why_not_exact(text, anchor, dedented=dedented) + _gone(text, [anchor])


def _regex_outcome(text: str, pattern: str) -> tuple[Outcome, str]:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return Outcome.UNKNOWN, f"the pattern does not compile in Python: {exc}"
    if compiled.search(text):
        return Outcome.OK, ""
    if re.search(pattern, text, _UNRECORDED_FLAGS):
        return Outcome.UNKNOWN, "the pattern matches only with re.MULTILINE/re.DOTALL"
    return Outcome.MISSING, "the pattern matches nowhere in the source" + _gone(
        text, _required_literals(pattern)
    )


def _why_not_exact(text: str, anchor: str, *, dedented: bool) -> str:
    if not dedented and anchor in textwrap.dedent(text):
        return "found only in textwrap.dedent(source), which the project does not apply"
    if _collapsed(anchor) in _collapsed(text):
        return "found only after collapsing whitespace (str.replace is exact)"
    first = next((line.strip() for line in anchor.splitlines() if line.strip()), "")
    if first and first != anchor.strip() and first in text:
        return f"its first line ({first!r}) is there, the text after it changed"
    return "the text is not in the source"


def _gone(text: str, literals: list[str]) -> str:
    """Where none of the names the text mentions (identifiers every match contains, but
    keywords and ``self``/``cls``, which any method has) is anywhere in the source: no
    spelling of it is there, however reformatted, nor any edit that kept one of its names.
    A text with no such name says nothing ("")."""
    names = [
        name
        for literal in literals
        for name in dict.fromkeys(_WORD.findall(literal))
        if not keyword.iskeyword(name) and name not in _EVERY_METHODS
    ]
    if not names or any(name in text for name in names):
        return ""
    shown = ", ".join(repr(name) for name in dict.fromkeys(names))
    return f"; {TEXT_GONE} (none of its names is in it: {shown})"


def _required_literals(pattern: str) -> list[str]:
    """The literal texts every match of ``pattern`` contains, as far as a plain reading of
    the parsed pattern tells (none for a case-insensitive one, or one that does not parse)."""
    try:
        parsed = _parser.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return []
    if parsed.state.flags & re.IGNORECASE:
        return []
    found: list[str] = []
    _collect_literals(list(parsed), found)
    return found


def _collect_literals(items: list[tuple[object, object]], found: list[str]) -> None:
    """Runs of consecutive literal characters in ``items``, into ``found``: a group's runs
    are its own; anything else ends a run (a repeated item occurs at least once where the
    repeat's minimum is not 0, so its runs count there)."""
    run: list[str] = []

    def end() -> None:
        if run:
            found.append("".join(run))
            run.clear()

    for op, argument in items:
        if op is _parser.LITERAL:
            run.append(chr(argument))  # type: ignore[arg-type]
        elif op is _parser.SUBPATTERN:
            _group, added, _removed, body = argument  # type: ignore[misc]
            end()
            if not added & re.IGNORECASE:
                _collect_literals(list(body), found)
        elif op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT):
            low, _high, body = argument  # type: ignore[misc]
            end()
            if low >= 1:
                _collect_literals(list(body), found)
        else:
            end()
    end()


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EVERY_METHODS = frozenset({"self", "cls"})


def _collapsed(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()
