"""The classes and functions a module defines at its top level, read off its text.

Whether ``transformers.modeling_utils`` binds ``PreTrainedModel`` is most of what many
references ask of the largest files of a package, and parsing one (300 KB) to answer it
costs more than everything else a lookup does. A ``class`` or ``def`` statement that
starts a line at column 0 is a top-level statement of the module, unless the line lies
inside a string (a docstring's example): :func:`top_level_definitions` skips every
string literal as Python's tokenizer delimits it (a quote escaped by a backslash does
not close one, in raw strings too) and comments, then reads the definitions. Python
binds each of them when it imports the module, whatever else the module binds later
under the same name; a name found so is found, and a name not found is left to the code
index (it may be imported, assigned, or defined inside an ``if``).

Nothing is guessed: a text whose strings do not close (not Python at all), or a module
that assigns into ``sys.modules`` (``sys.modules[__name__] = _LazyModule(...)``: its
attributes are then another object's), gives None, and the caller reads the code index.
"""

from __future__ import annotations

import bisect
import re

_DEFINITION = re.compile(r"^(?:async[ \t]+)?(def|class)[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.M)
# What opens a string or a comment; a string's prefix letters (r, b, f, u) do not change
# where it ends.
_OPENER = re.compile(r"[#'\"]")
# ``sys.modules[__name__] = _LazyModule(...)``: the module's attributes are then another
# object's. Any assignment into sys.modules makes the text undecided.
_REPLACES_A_MODULE = re.compile(r"sys\.modules\[[^\]\n]*\]\s*=(?!=)")


def top_level_definitions(text: str) -> dict[str, str] | None:
    """The module's column-0 ``class``/``def`` statements: name -> "class" or "def" (a
    class where both bind it, as the code index answers); None where the text cannot be
    read so exactly (see the module's docstring)."""
    if _REPLACES_A_MODULE.search(text):
        return None
    skipped = _skipped_spans(text)
    if skipped is None:
        return None
    names: dict[str, str] = {}
    starts = [start for start, _ in skipped]
    for found in _DEFINITION.finditer(text):
        kind, name = found.groups()
        if not _inside(skipped, starts, found.start()) and names.get(name) != "class":
            names[name] = kind
    return names


def _skipped_spans(text: str) -> list[tuple[int, int]] | None:
    """(start, end) of every string literal and comment, in order; None when a string
    does not close."""
    spans = []
    at = 0
    while (opener := _OPENER.search(text, at)) is not None:
        start = opener.start()
        if opener.group() == "#":
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
        else:
            quote = text[start] * 3 if text.startswith(text[start] * 3, start) else text[start]
            end = _closing(text, start + len(quote), quote)
            if end is None:
                return None
        spans.append((start, end))
        at = end
    return spans


def _closing(text: str, at: int, quote: str) -> int | None:
    """Where the string whose body starts at ``at`` ends (past its closing quote)."""
    while True:
        close = text.find(quote, at)
        if close < 0:
            return None
        if len(quote) == 1 and "\n" in text[at:close]:
            # A one-line string runs to its line's end, unless a backslash continues it.
            line_end = text.find("\n", at)
            if not _escaped(text, line_end):
                return None
            at = line_end + 1
            continue
        if _escaped(text, close):
            at = close + 1
            continue
        return close + len(quote)


def _escaped(text: str, at: int) -> bool:
    """Whether the character at ``at`` follows an odd run of backslashes."""
    run = 0
    while at - run - 1 >= 0 and text[at - run - 1] == "\\":
        run += 1
    return run % 2 == 1


def _inside(spans: list[tuple[int, int]], starts: list[int], at: int) -> bool:
    index = bisect.bisect_right(starts, at) - 1
    return index >= 0 and spans[index][0] <= at < spans[index][1]
