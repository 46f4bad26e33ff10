"""What the code index must read the same under every supported Python (3.10 to 3.13).

CI runs this suite under each of them: the statement table must cover the running
Python's ``ast``, and code that canary writes in its own source must match index text
whichever Python's printer made that text.
"""

from __future__ import annotations

import ast
import sys
import textwrap

import pytest
from symbols_trees import package

from canary.codeindex import NOT_LITERAL, normalised_text, parse_module
from canary.codeindex.statements import STATEMENTS, Binds
from canary.errors import ParseError, Subject
from canary.expectations import expect_decorated
from canary.report.diff import diff_subject
from canary.surface.extract import survey
from canary.symbols.lazy import lazy_module

# One printer's text, then how another Python prints the same tree: 3.10 writes a
# comprehension's tuple target in parentheses, 3.11 and later do not.
PRINTER_FORMS = [
    ("{k: v for k, v in d.items()}", "{k: v for (k, v) in d.items()}"),
    ("[a for a, b in pairs]", "[a for (a, b) in pairs]"),
    ("table[tuple((k for k, v in items))]", "table[tuple(k for (k, v) in items)]"),
]


def module(text: str):
    return parse_module(textwrap.dedent(text), path="pkg/mod.py", origin="test")


def every_statement_class() -> set[type]:
    found, stack = set(), [ast.stmt]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub.__module__ == "ast":
                found.add(sub)
                stack.append(sub)
    return found


def test_the_statement_table_covers_every_statement_of_the_running_python():
    assert every_statement_class() == set(STATEMENTS), (
        f"Python {sys.version_info[:2]}: canary.codeindex.statements does not classify "
        f"{sorted(c.__name__ for c in every_statement_class() - set(STATEMENTS))}"
    )
    if hasattr(ast, "TypeAlias"):
        assert STATEMENTS[ast.TypeAlias] is Binds.ASSIGNMENT


@pytest.mark.skipif(not hasattr(ast, "TypeAlias"), reason="type X = ... is Python 3.12+ syntax")
def test_a_type_alias_is_a_binding_with_no_literal_value():
    mod = module(
        """
        type Labels = list[int] | None

        class Batch:
            type Row = tuple[int, str]
        """
    )
    alias = mod.assignments["Labels"]
    assert (alias.op, alias.value, alias.literal) == ("type", "list[int] | None", NOT_LITERAL)
    assert mod.binds("Labels")
    assert mod.classes["Batch"].attributes["Row"].literal is NOT_LITERAL
    subject = Subject("pkg/mod.py", "Labels")
    diff = diff_subject(subject, mod, module("type Labels = list[int]\n"), "1.0", "2.0")
    assert "-type Labels = list[int] | None" in diff.diff
    assert "+type Labels = list[int]" in diff.diff


@pytest.mark.skipif(not hasattr(ast, "TypeAlias"), reason="type X = ... is Python 3.12+ syntax")
def test_a_name_imported_from_an_upstream_type_alias_is_found():
    tree = package(
        "pkg",
        {"pkg/__init__.py": "from .types import Labels\n", "pkg/types.py": "type Labels = int\n"},
    )
    found = tree.lookup("pkg.Labels")
    assert (found.found, found.path) == (True, "pkg/types.py")


def test_for_and_with_targets_at_module_level_are_bindings():
    mod = module(
        """
        for _name, _value in TABLE.items():
            pass
        with open(PATH) as handle, lock:
            pass
        """
    )
    for name in ("_name", "_value", "handle"):
        assert mod.binds(name), name
    assert mod.assignments["_name"].op == "for"
    assert mod.assignments["_name"].literal is NOT_LITERAL
    assert mod.assignments["handle"].value == "open(PATH)"


def test_a_statement_the_table_does_not_know_is_a_parse_error(monkeypatch):
    monkeypatch.delitem(STATEMENTS, ast.Global)
    unknown = r"does not know what a Global statement of Python 3\.\d+ binds"
    with pytest.raises(ParseError, match=unknown):
        module("global x\n")


@pytest.mark.parametrize(("written", "other"), PRINTER_FORMS)
def test_code_in_either_printer_form_reads_as_the_running_python_prints_it(written, other):
    printed = ast.unparse(ast.parse(written))
    assert normalised_text(written) == normalised_text(other) == printed
    assert normalised_text("not code (") == "not code ("


@pytest.mark.parametrize(("written", "other"), PRINTER_FORMS)
def test_whole_text_lookups_take_code_in_either_printer_form(written, other):
    function = module(
        f"""
        @register({written})
        def build(d, pairs, items, table):
            cache[{written}] = collect({written})
        """
    ).functions["build"]
    # The written form and the other one: whichever of them the running Python prints.
    for form in (written, other):
        assert function.assignments_to(f"cache[{form}]"), form
        assert expect_decorated(function, f"register({form})") == f"register({form})"
    assert function.calls_to("collect")


@pytest.mark.parametrize(
    "comprehension",
    [
        "{k: set(v) for k, v in _import_structure.items()}",
        "{k: set(v) for (k, v) in _import_structure.items()}",
    ],
)
def test_the_lazy_structure_steps_canary_knows_are_known_in_either_printer_form(comprehension):
    lazy = lazy_module(
        module(
            f"""
            import sys
            _import_structure = {{"trainer": ["Trainer"]}}
            _import_structure = {comprehension}
            for _alias in ("old",):
                _import_structure.setdefault(_alias, set())
            sys.modules[__name__] = _LazyModule(__name__, __file__, _import_structure)
            """
        )
    )
    assert lazy is not None
    assert lazy.unevaluated == ()
    assert lazy.names == {"Trainer": "trainer"}


NEWER_SYNTAX = [
    ((3, 11), "try:\n    pass\nexcept* ValueError:\n    pass\n"),
    ((3, 12), "type Labels = list[int]\n"),
]


@pytest.mark.parametrize(("since", "text"), NEWER_SYNTAX)
def test_a_target_file_in_newer_syntax_names_the_python_that_parses_it(tmp_path, since, text):
    if sys.version_info >= since:
        pytest.skip(f"Python {sys.version_info[0]}.{sys.version_info[1]} parses this syntax")
    (tmp_path / "new.py").write_text("import transformers\n" + text)
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    newer = f"{sys.version_info[0]}.{sys.version_info[1] + 1}"
    with pytest.raises(ParseError) as raised:
        survey(tmp_path, ["new.py"], upstream=("transformers",))
    assert f"the running Python {running} cannot parse it" in str(raised.value)
    assert f"run canary under Python {newer} or later" in str(raised.value)
    assert "exclude = [...]" in str(raised.value)
