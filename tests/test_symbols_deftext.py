"""Top-level classes and functions read off a module's text (canary.symbols.deftext)."""

from __future__ import annotations

import ast
import textwrap

import pytest
from symbols_trees import package

from canary.symbols.deftext import top_level_definitions

MODULE = textwrap.dedent(
    '''
    """A module.

    class InTheDocstring:
        pass
    """
    import torch

    # class InAComment:
    TEMPLATE = """
    def in_a_string():
        pass
    """
    ESCAPED = "a \\" quote, then\\
    class InAContinuedString: "
    RAW = r'a \\' b'


    class Model(torch.nn.Module):
        def forward(self):
            pass


    @torch.no_grad()
    def generate():
        pass


    async def serve():
        pass


    if torch.cuda.is_available():
        def fast():
            pass

    Model = None  # bound again, still bound
    '''
)


def test_the_names_are_those_ast_finds_at_the_top_level_and_no_string_s():
    found = top_level_definitions(MODULE)
    top = {n.name for n in ast.parse(MODULE).body if hasattr(n, "name")}
    assert found == {"Model": "class", "generate": "def", "serve": "def"}
    assert set(found) == top


@pytest.mark.parametrize(
    "text",
    [
        "sys.modules[__name__] = _LazyModule(__name__, globals())\nclass A:\n    pass\n",
        'x = """never closed\nclass A:\n    pass\n',
        "x = 'one line\nclass A:\n    pass\n",
    ],
    ids=["replaces itself in sys.modules", "a string that never closes", "an open quote"],
)
def test_a_text_that_cannot_be_read_exactly_is_undecided(text):
    assert top_level_definitions(text) is None


def test_reading_sys_modules_is_not_replacing_a_module():
    text = "import sys\nmodule = sys.modules[cls.__module__]\nclass A:\n    pass\n"
    assert top_level_definitions(text) == {"A": "class"}


FILES = {
    "pkg/__init__.py": "from .utils import Helper, build\n",
    "pkg/utils.py": """
        '''
        class Ghost:
        '''
        from .base import build


        class Helper:
            pass
    """,
    "pkg/base.py": "def build():\n    pass\n",
}


def test_a_bound_name_the_text_defines_is_found_without_parsing_its_module():
    loaded: list[str] = []
    tree = package("pkg", FILES, listed=True, loaded=loaded)
    found = tree.lookup("pkg.Helper", bound_only=True)
    assert (found.found, found.kind, found.path, found.cls) == (True, "class", "pkg/utils.py", None)
    assert "pkg/utils.py" not in loaded  # only the package's __init__ was parsed
    # What the text does not define (an import) is left to the code index, which follows it.
    built = tree.lookup("pkg.build", bound_only=True)
    assert (built.found, built.path) == (True, "pkg/base.py")
    assert "pkg/utils.py" in loaded


def test_a_name_only_a_docstring_mentions_is_not_found_from_the_text():
    tree = package("pkg", FILES, listed=True)
    assert tree.lookup("pkg.utils.Ghost", bound_only=True).found is False


def test_a_lookup_that_needs_the_object_gets_it_after_one_that_did_not():
    tree = package("pkg", FILES, listed=True)
    assert tree.lookup("pkg.Helper", bound_only=True).cls is None
    # The light answer is never handed to a caller that steps into the class.
    assert tree.lookup("pkg.Helper").cls is not None
    assert tree.lookup("pkg.Helper.__init__").found is True
