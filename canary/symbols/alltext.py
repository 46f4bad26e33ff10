"""What transformers' ``define_import_structure`` serves from a file, read from its text as
it reads it, without parsing the file: the ``__all__`` and the ``@requires`` definitions.

``define_import_structure(folder)`` (transformers 4.52+) serves the ``__all__`` of every
file of a folder, and it never imports or parses them: ``fetch__all__`` (in
``utils/import_utils.py``, the same from 4.52 to 5.25) takes the last line that starts
with ``__all__`` and reads the names off it, or off the lines that follow it up to a line
that is only ``]``. A lookup that misses reads every file of ``models/`` that way (about
2,000 per release), so the code index of each (a full parse) is far too dear for it.

:func:`read_all` answers only where that reading and Python's agree by construction: the
text names ``__all__`` exactly once, on a line of its own at column 0, as
``__all__ = [...]`` holding nothing but string literals that are identifiers (on one line,
or one per line up to a closing ``]``). Anything else (``__all__`` built in steps, named
twice, a comment or two names on a line of the list) is None: not decided here, the caller
reads the file's code index instead, so nothing is guessed.

Besides the ``__all__``, ``create_import_structure_from_path`` (the same from 4.52 to 5.25)
serves every definition its ``@requires`` line scan finds (:func:`requires_names`), most
also in ``__all__``, some not (``model_addition_debugger_context``, ``Trainer``, 5.25's
``TorchvisionBackend``): :func:`read_all` gives both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

TextAll = tuple[str, ...] | None
AllReader = Callable[[Sequence[str]], Mapping[str, TextAll]]
"""Paths in the installed layout -> each file's ``__all__`` as :func:`read_all` reads it
(None where it does not decide it, or the file is absent), many files in one go: the
caller reads the files (:func:`read_all_of` over their bytes) and may remember it."""

_NAME = r"""(?:"[A-Za-z_][A-Za-z0-9_]*"|'[A-Za-z_][A-Za-z0-9_]*')"""
# Spaces only, never tabs: fetch__all__ strips spaces, quotes and commas off a name, so a
# tab would stay in it. ``__all__ = ["A", "B"]`` on one line, ending in the bracket
# (fetch__all__ reads a line that does not end in "]" as the first of several).
_ONE_LINE = re.compile(rf"__all__ = \[ *(?:{_NAME}(?: *, *{_NAME})* *,?)? *\]")
# ``__all__ = [`` then one name per line, then a line that is only ``]``.
_OPENING = re.compile(r"__all__ = \[ *")
_ITEM = re.compile(rf" *({_NAME}) *,? *")
_CLOSING = re.compile(r" *\] *")
_QUOTED = re.compile(r"""["']([A-Za-z_][A-Za-z0-9_]*)["']""")


def read_all(text: str) -> TextAll:
    """The names define_import_structure serves from the file: what its ``__all__`` lists
    (none when the file never names ``__all__``), then its :func:`requires_names`; None
    when the ``__all__`` is not of the plain shape (see the module's docstring)."""
    listed = _listed_all(text)
    if listed is None:
        return None
    return listed + tuple(n for n in dict.fromkeys(requires_names(text)) if n not in listed)


def requires_names(text: str) -> list[str]:
    """The names ``create_import_structure_from_path`` exports for ``@requires``, line for
    line as it finds them: skipping lines that start with a space, a tab, ``)`` or a
    decorator other than ``@requires``, a ``class``/``def`` line is exported when the
    last line not skipped before it contains ``@requires``; any other line after such a
    line is stepped over (a comment, a docstring's column-0 text). The name is what follows
    the keyword up to ``(``, less colons (``class A:`` is ``A``), as it takes it."""
    if "@requires" not in text:
        return []
    names = []
    previous = ""
    # It reads the file in text mode: universal newlines.
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if line.startswith((" ", "\t", "@", ")")) and not line.startswith("@requires"):
            continue
        if "@requires" in previous:
            if not line.startswith(("class", "def")):
                continue  # the @requires line stays the one before the next
            start = 6 if line.startswith("class") else 4
            names.append(line[start:].split("(")[0].strip(":"))
        previous = line
    return names


def _listed_all(text: str) -> tuple[str, ...] | None:
    count = text.count("__all__")
    if count == 0:
        return ()
    start = text.find("__all__")
    if count != 1 or (start > 0 and text[start - 1] != "\n"):
        return None
    first, _, rest = text[start:].partition("\n")
    if _ONE_LINE.fullmatch(first):
        return tuple(_QUOTED.findall(first))
    if _OPENING.fullmatch(first):
        return _one_per_line(rest)
    return None


def _one_per_line(lines: str) -> tuple[str, ...] | None:
    """The names listed one per line up to a line that is only ``]``."""
    names: list[str] = []
    for line in lines.split("\n"):
        if _CLOSING.fullmatch(line):
            return tuple(names)
        item = _ITEM.fullmatch(line)
        if item is None:
            return None
        names.append(item.group(1)[1:-1])
    return None  # never closed: not a statement Python would run


def read_all_of(contents: Mapping[str, bytes | None]) -> dict[str, TextAll]:
    """:func:`read_all` of each file's bytes (path -> bytes, None where absent): UTF-8, as
    define_import_structure opens them; None for a file that is absent or does not
    decode (its code index decides it)."""
    found: dict[str, TextAll] = {}
    for path, content in contents.items():
        try:
            found[path] = read_all(content.decode("utf-8")) if content is not None else None
        except UnicodeDecodeError:
            found[path] = None
    return found
