"""Names bound to an instance of the package's class: their attributes are the class's
members (canary.symbols.instances through PackageTree.lookup)."""

from __future__ import annotations

import pytest
from symbols_trees import package

REGISTRY = """
    class Registry:
        def __init__(self, tasks):
            self.tasks = tasks

        def register(self, name):
            self.tasks[name] = None
"""

MADE = "from .registry import Registry\nR = Registry({})\n"

ENUM = (
    "from enum import Enum\nfrom .registry import Registry\n"
    "class Padding(str, Enum):\n    LONGEST = 'longest'\n    MADE = Registry({})\n"
)


def lookup(module: str, dotted: str):
    """``dotted`` in a package whose ``pkg/registry.py`` defines Registry and
    ``pkg/mod.py`` is ``module``."""
    tree = package(
        "pkg",
        {"pkg/__init__.py": "", "pkg/registry.py": REGISTRY, "pkg/mod.py": module},
    )
    return tree.lookup(dotted)


@pytest.mark.parametrize(
    ("module", "dotted", "found"),
    [
        # a method, an instance attribute, a method the class does not have
        (MADE, "pkg.mod.R.register", True),
        (MADE, "pkg.mod.R.tasks", True),
        (MADE, "pkg.mod.R.register_pipeline", False),
        ("from . import registry\nR = registry.Registry({})\n", "pkg.mod.R.gone", False),
        # annotated, and bound twice: the last binding is what the module holds
        ("from .registry import Registry\nR: Registry = Registry({})\n", "pkg.mod.R.gone", False),
        ("from .registry import Registry\nR = None\nR = Registry({})\n", "pkg.mod.R.gone", False),
        # a class attribute naming such a module name, or holding the call itself
        (
            "from .registry import Registry\nR = Registry({})\nclass Auto:\n    _map = R\n",
            "pkg.mod.Auto._map.gone",
            False,
        ),
        (
            "from .registry import Registry\nclass Auto:\n    _map = Registry({})\n",
            "pkg.mod.Auto._map.register",
            True,
        ),
    ],
)
def test_an_attribute_of_an_instance_is_a_member_of_its_class(module, dotted, found):
    assert lookup(module, dotted).found is found


@pytest.mark.parametrize(
    "module",
    [
        "from .registry import Registry\nif FLAG:\n    R = Registry({})\n",  # under an if
        "from .registry import Registry\nR = Registry({})\nR.gone = 1\n",  # set on it
        "from .registry import Registry\nR = Registry({})\nsetattr(R, 'gone', 1)\n",
        "from .registry import Registry\nR = Registry({})\nR.__dict__.update(gone=1)\n",
        "from .registry import Registry\nR = Registry({})\ndef f():\n    global R\n    R = 1\n",
        "from .registry import Registry\nR = Registry({}) or None\n",  # not only a call
        "from .registry import Registry\nR = Registry.make()\n",  # what make returns
        "from torch import Registry\nR = Registry({})\n",  # a class outside the package
        "class New:\n    def __new__(cls):\n        return 1\nR = New()\n",
        "class Lazy:\n    def __getattr__(self, name):\n        return 1\nR = Lazy()\n",
        # attributes given otherwise than by self.x = ...: set from kwargs, registered
        "class Kw:\n    def __init__(self, **kw):\n        for k, v in kw.items():\n"
        "            setattr(self, k, v)\nR = Kw(gone=1)\n",
        "from torch import nn\nclass Net(nn.Module):\n    pass\nR = Net()\n",
    ],
)
def test_a_name_not_exactly_an_instance_of_a_class_read_here_stays_unknown(module):
    assert lookup(module, "pkg.mod.R.gone").found is None


@pytest.mark.parametrize(
    ("module", "dotted", "found"),
    [
        ('__version__ = "4.46.1"\n', "pkg.mod.__version__.split", True),
        ('__version__ = "4.46.1"\n', "pkg.mod.__version__.major", False),
        ("NAMES = ['a']\nNAMES.append('b')\n", "pkg.mod.NAMES.extend", True),
        ("NAMES = ['a']\n", "pkg.mod.NAMES.add", False),
        ("class Model:\n    _no_split = ['Layer']\n", "pkg.mod.Model._no_split.append", True),
        ("class Model:\n    _no_split = ['Layer']\n", "pkg.mod.Model._no_split.add", False),
        # a placeholder another module or a subclass replaces; a test; a later rebinding
        ("class Model:\n    config_class = None\n", "pkg.mod.Model.config_class.gone", None),
        ("if FLAG:\n    NAMES = ['a']\n", "pkg.mod.NAMES.add", None),
        ("NAMES = ['a']\nNAMES += ('b',)\n", "pkg.mod.NAMES.add", None),
        ("N = 1\n", "pkg.mod.N.is_integer", None),  # int gained it in 3.12
        # an Enum's class attributes are its members, a NamedTuple's its fields
        (ENUM, "pkg.mod.Padding.LONGEST.value", None),
        (ENUM, "pkg.mod.Padding.MADE.value", None),
        ("import typing\nclass T(typing.NamedTuple):\n    x: list = []\n", "pkg.mod.T.x.add", None),
    ],
)
def test_an_attribute_of_a_literal_is_its_builtin_types(module, dotted, found):
    assert lookup(module, dotted).found is found
