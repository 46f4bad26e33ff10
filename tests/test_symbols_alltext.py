"""canary.symbols.alltext: a file's ``__all__`` read off its text, as transformers'
``define_import_structure`` reads it, and only where Python would read the same."""

from __future__ import annotations

import textwrap

import pytest

from canary.codeindex import parse_module
from canary.symbols.alltext import read_all, requires_names
from canary.symbols.effects import declared_all


def fetch__all__(file_content: str) -> list[str]:
    """transformers' own reader (``utils/import_utils.py``, unchanged from 4.52 to 5.25),
    copied as the oracle: what ``define_import_structure`` serves from a file."""
    if "__all__" not in file_content:
        return []
    start_index = None
    lines = file_content.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("__all__"):
            start_index = index
    if start_index is None:
        return []
    lines = lines[start_index:]
    if lines[0].endswith("]"):
        return [obj.strip("\"' ") for obj in lines[0].split("=")[1].strip(" []").split(",")]
    _all = []
    for i in range(1, len(lines)):
        if lines[i].strip() == "]":
            return _all
        _all.append(lines[i].strip("\"', "))
    return _all


DECIDED = {
    "one line": ('class A: ...\nclass B: ...\n\n__all__ = ["A", "B"]\n', ("A", "B")),
    "single quotes, trailing comma": ("__all__ = ['A', 'B',]\n", ("A", "B")),
    "no final newline": ('__all__ = ["A"]', ("A",)),
    "one per line": (
        '"""Doc."""\n\nclass LlamaModel: ...\n\n__all__ = [\n    "LlamaModel",\n'
        '    "LlamaPreTrainedModel",\n]\n',
        ("LlamaModel", "LlamaPreTrainedModel"),
    ),
    "the last name without its comma": ('__all__ = [\n    "A",\n    "B"\n]\n', ("A", "B")),
    "empty": ("__all__ = []\n", ()),
    "code after the list": ('__all__ = [\n    "A",\n]\n\nx = 1\n', ("A",)),
}


@pytest.mark.parametrize(("text", "names"), DECIDED.values(), ids=DECIDED.keys())
def test_the_plain_shapes_are_read_as_transformers_and_python_read_them(text, names):
    assert read_all(text) == names
    # transformers reads the same names (its reader keeps an empty one for "[]" or a
    # trailing comma, which no lookup asks for)...
    assert [n for n in fetch__all__(text) if n] == list(names)
    # ... and so does Python (the code index's evaluation of the module).
    built = declared_all(parse_module(text, path="m.py", origin="test"))
    assert built is not None
    assert (built.value, built.unevaluated) == (names, ())


def test_a_file_that_never_names_all_lists_nothing():
    text = "class A: ...\n\ndef f(): ...\n"
    assert read_all(text) == ()
    assert fetch__all__(text) == []
    assert declared_all(parse_module(text, path="m.py", origin="test")) is None


UNDECIDED = {
    # Built in steps: Python's value needs the steps evaluated, and fetch__all__ reads
    # only the last line (here ["B"]), so the text alone says nothing reliable.
    "built in steps": '__all__ = ["A"]\n__all__ += ["B"]\n',
    "extended": '__all__ = ["A"]\n__all__.extend(["B"])\n',
    "from another module": '__all__ = ["A"] + other.__all__\n',
    "a tuple": '__all__ = ("A", "B")\n',
    "annotated": '__all__: list[str] = ["A"]\n',
    "no spaces around =": '__all__=["A"]\n',
    "indented, under a condition": 'if x:\n    __all__ = ["A"]\n',
    "named in a docstring too": '"""Sets __all__."""\n__all__ = ["A"]\n',
    "a comment in the list": '__all__ = [\n    # models\n    "A",\n]\n',
    "two names on a line of the list": '__all__ = [\n    "A", "B",\n]\n',
    "a blank line in the list": '__all__ = [\n    "A",\n\n    "B",\n]\n',
    # fetch__all__ strips spaces, not tabs: it would serve "\t'A".
    "tab indentation": "__all__ = [\n\t'A',\n]\n",
    # A line not ending in "]" is read by fetch__all__ as the first of several.
    "a space after the bracket": '__all__ = ["A"] \n',
    "a comment after the bracket": '__all__ = ["A"]  # public\n',
    "a comment after the opening": '__all__ = [  # public\n    "A",\n]\n',
    "not closed": '__all__ = [\n    "A",\n',
    "not an identifier": '__all__ = ["A-B"]\n',
    "a non-string": "__all__ = [A]\n",
    "carriage returns": '__all__ = [\r\n    "A",\r\n]\r\n',
    "not at the start of its line": 'x = 1; __all__ = ["A"]\n',
}


@pytest.mark.parametrize("text", UNDECIDED.values(), ids=UNDECIDED.keys())
def test_any_other_shape_is_left_to_the_code_index(text):
    assert read_all(text) is None


def test_a_real_model_file_tail():
    text = textwrap.dedent(
        '''\
        # Copyright 2024 The HuggingFace Team.
        from ...modeling_utils import PreTrainedModel


        class GemmaPreTrainedModel(PreTrainedModel):
            config_class = "GemmaConfig"


        class GemmaModel(GemmaPreTrainedModel):
            """A model with "quotes" and [brackets]."""


        __all__ = [
            "GemmaModel",
            "GemmaPreTrainedModel",
        ]
        '''
    )
    assert read_all(text) == ("GemmaModel", "GemmaPreTrainedModel")
    assert fetch__all__(text) == ["GemmaModel", "GemmaPreTrainedModel"]


def requires_exports(file_content: str) -> list[str]:
    """The names ``create_import_structure_from_path`` (transformers'
    ``utils/import_utils.py``, the same in 4.52 and 5.25) exports for ``@requires``,
    copied as the oracle with its backends parsing left out (``file_content`` as its
    text-mode ``open`` reads it)."""
    names: list[str] = []
    previous_line = ""
    if "@requires" in file_content:
        lines = file_content.split("\n")
        for line in lines:
            if line.startswith((" ", "\t", "@", ")")) and not line.startswith("@requires"):
                continue
            skip_line = False
            if "@requires" in previous_line:
                if not line.startswith("class") and not line.startswith("def"):
                    skip_line = True
                else:
                    start_index = 6 if line.startswith("class") else 4
                    names.append(line[start_index:].split("(")[0].strip(":"))
            if not skip_line:
                previous_line = line
    return names


REQUIRES = {
    "one line": ('@requires(backends=("torch",))\nclass A(B):\n    pass\n', ["A"]),
    "backends over lines, a comment, other decorators": (
        "@dataclass\n@requires(\n    backends=(\n        'torch',\n    )\n)\n"
        "# Copied from x\n@other\ndef f(x):\n    pass\n",
        ["f"],
    ),
    # only the next class/def after it: B is not
    "a blank line and a statement are stepped over": (
        "@requires(backends=())\n\nX = 1\nclass A:\n    pass\nclass B:\n    pass\n",
        ["A"],
    ),
    "a method is not exported": ("class A:\n    @requires()\n    def m(self): ...\n", []),
    "nor an async def": ("@requires()\nasync def g(): ...\n", []),
    "nor what an aliased decorator marks": ("@utils.requires()\ndef k(): ...\n", []),
    # an async def is stepped over like any statement: the def after it is the one
    "the def after an async def": ("@requires()\nasync def g(): ...\ndef h(): ...\n", ["h"]),
    "a column-0 comment naming it counts, as there": ("# see @requires\ndef f(): ...\n", ["f"]),
    "windows line endings": ('@requires(backends=("torch",))\r\nclass A:\r\n    pass\r\n', ["A"]),
}


@pytest.mark.parametrize(("text", "names"), REQUIRES.values(), ids=REQUIRES.keys())
def test_requires_definitions_are_read_as_transformers_reads_them(text, names):
    universal = text.replace("\r\n", "\n")  # what its text-mode open hands it
    assert requires_names(text) == requires_exports(universal) == names


def test_the_served_names_are_the_all_then_the_requires_definitions():
    text = (
        '@requires(backends=("torch",))\nclass A:\n    pass\n\n'
        '@requires(backends=("torch",))\ndef helper(): ...\n\n__all__ = ["A", "B"]\n'
    )
    assert read_all(text) == ("A", "B", "helper")
    assert requires_names(text) == ["A", "helper"]
    # an __all__ the text does not decide leaves the whole file to the code index
    assert read_all(text + "__all__ += []\n") is None
