"""canary.symbols.alltext: a file's ``__all__`` read off its text, as transformers'
``define_import_structure`` reads it, and only where Python would read the same."""

from __future__ import annotations

import textwrap

import pytest

from canary.codeindex import parse_module
from canary.symbols.alltext import read_all
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
