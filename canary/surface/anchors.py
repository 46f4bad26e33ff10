"""Whether an anchor still applies to upstream source, matched as the project matches it.

A project rewrites upstream code with ``inspect.getsource(f).replace(old, new)`` (or tests
``old in source``, or ``re.sub``): when ``old`` is gone the patch silently does nothing.
``.replace`` is exact, so an anchor found only after collapsing whitespace is a miss (the
reason says so, since that is the usual cause: upstream reformatted); a regex is searched
as a regex.
"""

from __future__ import annotations

import re
import textwrap

from canary.surface.model import Match, Outcome

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
    return Outcome.MISSING, _why_not_exact(text, anchor, dedented=dedented)


def _regex_outcome(text: str, pattern: str) -> tuple[Outcome, str]:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return Outcome.UNKNOWN, f"the pattern does not compile in Python: {exc}"
    if compiled.search(text):
        return Outcome.OK, ""
    if re.search(pattern, text, _UNRECORDED_FLAGS):
        return Outcome.UNKNOWN, "the pattern matches only with re.MULTILINE/re.DOTALL"
    return Outcome.MISSING, "the pattern matches nowhere in the source"


def _why_not_exact(text: str, anchor: str, *, dedented: bool) -> str:
    if not dedented and anchor in textwrap.dedent(text):
        return "found only in textwrap.dedent(source), which the project does not apply"
    if _collapsed(anchor) in _collapsed(text):
        return "found only after collapsing whitespace (str.replace is exact)"
    first = next((line.strip() for line in anchor.splitlines() if line.strip()), "")
    if first and first != anchor.strip() and first in text:
        return f"its first line ({first!r}) is there, the text after it changed"
    return "the text is not in the source"


def _collapsed(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()
