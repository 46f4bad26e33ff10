"""Anchors: the text a project looks for in upstream source, read off the calls and ``in``
tests that apply it to a source text, each recorded as a use."""

from __future__ import annotations

import ast
import re

from canary.surface import anchortests
from canary.surface.extract import syntax
from canary.surface.extract.conditions import Conditions
from canary.surface.extract.scopes import Binding, Stdlib
from canary.surface.model import Kind, Match, ReadFrom
from canary.surface.texts import Literals, Pattern, Text, Value, inline_flags

# str methods whose first argument is looked for in the text.
_ANCHOR_METHODS = frozenset(
    {"replace", "find", "rfind", "index", "rindex", "count", "split", "rsplit", "partition",
     "rpartition"}
)  # fmt: skip


# re functions: position of the string argument (the pattern is first; a compiled pattern's
# methods take the same arguments without it).
_RE_STRING_ARGUMENT = {
    "sub": 2, "subn": 2, "search": 1, "match": 1, "fullmatch": 1, "findall": 1,
    "finditer": 1, "split": 1,
}  # fmt: skip


# re functions (and compiled patterns' methods) whose replacement is an argument.
_RE_SUBSTITUTES = frozenset({"sub", "subn"})


_RE_FLAGS_ARGUMENT = {
    "sub": 4, "subn": 4, "search": 2, "match": 2, "fullmatch": 2, "findall": 2,
    "finditer": 2, "split": 3,
}  # fmt: skip


def _read_from(text: Text, name: str | None) -> ReadFrom | None:
    """Where a registry with several sources reads method ``name`` from (None: sources
    without ``{name}``): each source's owner (what it is looked up on), in order."""
    if not text.tried:
        return None
    filled = (t.replace("{name}", name) if name else t for t in text.tried)
    owners = tuple(t.rpartition(".")[0] for t in filled)
    return ReadFrom(owners, text.follow_shims)


def _inside(inserted: str, literal: str) -> bool:
    """Whether a text the project inserted lies inside an anchor (a blank or one-word
    insertion says nothing: upstream may have it too)."""
    return len(inserted.strip()) >= 8 and inserted in literal


def _carries_own_name(text: str, tokens: frozenset[str]) -> bool:
    """A private identifier in ``text`` carries the project's name (``_unsloth_fused``)."""
    return any(
        any(token in name.lower() for token in tokens)
        for name in _TEXT_IDENTIFIER.findall(text)
        if name.startswith("_")
    )


_TEXT_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Anchoring(Conditions):
    """Anchors applied to source texts, recorded as uses."""

    def anchor_tests(self) -> anchortests.Reading:
        """How the function walked tests its anchors (module level: not read)."""
        function = self.function_node
        return anchortests.EMPTY if function is None else anchortests.read(function)

    def anchor_branches(self, node: ast.If) -> anchortests.Branches:
        """The parts of an ``if`` that run only where an anchor its test asks about is
        there, when one of those is applied to a source text (the syntax alone cannot tell
        ``x in source`` from ``x in ("a", "b")``)."""
        if not any(isinstance(v, Text) for v in self.scope.values.values()):
            return anchortests.Branches()  # no test here can ask about a source text
        branches = self.anchor_tests().branches(node)
        if any(self._on_text(asked) for asked in branches.asks):
            return branches
        return anchortests.Branches()

    def _on_text(self, node: ast.expr) -> bool:
        """Whether an ``in`` test or anchor call is applied to a source text."""
        if isinstance(node, ast.Compare):
            return isinstance(self.value(node.comparators[0]), Text)
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        operands = [*node.args, *([func.value] if isinstance(func, ast.Attribute) else [])]
        return any(isinstance(self.value(operand), Text) for operand in operands)

    def anchors_of_call(self, node: ast.Call, callee: Binding | None) -> None:
        func, args = node.func, node.args
        if isinstance(func, ast.Attribute) and func.attr in _ANCHOR_METHODS and args:
            text = self.value(func.value)
            if isinstance(text, Text):
                deletes = func.attr == "replace" and self._empty(node, 1, "new")
                self.anchors(text, self.value(args[0]), node, regex=False, deletes=deletes)
                return
        if isinstance(callee, Stdlib) and callee.path.startswith("re."):
            name = callee.path.removeprefix("re.")
            position = _RE_STRING_ARGUMENT.get(name)
            if position is not None and len(args) > position:
                text = self.value(args[position])
                if isinstance(text, Text):
                    flags = syntax.argument_or_keyword(node, _RE_FLAGS_ARGUMENT[name], "flags")
                    deletes = name in _RE_SUBSTITUTES and self._empty(node, 1, "repl")
                    self.anchors(
                        text, self.value(args[0]), node, regex=True, flags=flags, deletes=deletes
                    )
            return
        if isinstance(func, ast.Attribute) and func.attr in _RE_STRING_ARGUMENT:
            pattern = self.value(func.value)
            position = _RE_STRING_ARGUMENT[func.attr] - 1
            if isinstance(pattern, Pattern) and len(args) > position:
                text = self.value(args[position])
                if isinstance(text, Text):
                    deletes = func.attr in _RE_SUBSTITUTES and self._empty(node, 0, "repl")
                    self.anchors(
                        text, Literals(pattern.patterns), node, regex=True, deletes=deletes
                    )

    def _empty(self, node: ast.Call, position: int, keyword: str) -> bool:
        """Whether the call's replacement (argument ``position`` or ``keyword``) is the
        empty string and nothing else: it deletes what it matches."""
        argument = syntax.argument_or_keyword(node, position, keyword)
        value = None if argument is None else self.value(argument)
        return (
            isinstance(value, Literals)
            and not value.fragments
            and bool(value.values)
            and all(v == "" for v in value.values)
        )

    def anchors(
        self,
        text: Text,
        anchor: Value | None,
        node: ast.AST,
        *,
        regex: bool,
        flags: ast.expr | None = None,
        deletes: bool = False,
    ) -> None:
        if not isinstance(anchor, Literals) or (regex and anchor.fragments):
            return
        if regex:
            match = Match.REGEX_DEDENTED if text.dedented else Match.REGEX
        else:
            match = Match.DEDENTED if text.dedented else Match.EXACT
        prefix = inline_flags(flags) if regex else ""
        origins = {o: _read_from(text, None) if o in text.tried else None for o in text.origins}
        if text.pending is not None:
            if self.selected is None:
                self.skip("anchor on a registered source where no test selected the method", node)
            else:
                origins |= {
                    source.replace("{name}", name): _read_from(text, name)
                    for name in self.selected
                    for source in text.tried or (text.pending,)
                }
        role = self.anchor_tests().role(node)
        if role is anchortests.Role.TRIGGER:
            self.skip("'if x not in source: <patch>' (absent x is when the patch applies)", node)
            return
        # a presence test of it, or code that runs only where a tested anchor is there
        tested = role is anchortests.Role.TESTED or self.tested > 0
        spot, partners = anchortests.spot(node), self.anchor_tests().alternatives(node)
        for literal in anchor.strings():
            if any(literal in inserted for inserted in text.inserted):
                continue  # the project's own text, put there by an earlier replace
            if any(_inside(inserted, literal) for inserted in text.inserted):
                # it spans what an earlier replace put there: it matches the rewritten
                # text, which upstream's source cannot be asked about
                self.skip("anchor spanning text the project inserted itself", node)
                continue
            if _carries_own_name(literal, self.project.own_tokens):
                self.skip("anchor naming the project's own marker (_unsloth_...)", node)
                continue
            for origin in sorted(origins):
                self.use(
                    Kind.ANCHOR,
                    origin,
                    node,
                    guarded=self.guarded > 0 or tested,
                    anchor=prefix + literal,
                    match=match,
                    spot=spot,
                    partners=partners,
                    read_from=origins[origin],
                    raises=role is anchortests.Role.RAISES,
                    deletes=deletes,
                )
