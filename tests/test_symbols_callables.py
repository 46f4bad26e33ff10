"""Attributes of the package's functions, methods and properties: Python's tables, and
what functools' caches add (canary.symbols.callables through PackageTree.lookup)."""

from __future__ import annotations

import pytest
from symbols_trees import package

UTILS = """
    import functools
    from functools import lru_cache


    def plain():
        pass


    @lru_cache
    def cached():
        pass


    @functools.lru_cache(maxsize=None)
    def cached_call():
        pass


    @deprecate("x")
    def wrapped():
        pass


    def tagged():
        pass


    tagged.registry = {}


    def rebound():
        pass


    rebound = lru_cache(rebound)


    class Config:
        def method(self):
            pass

        @classmethod
        def build(cls):
            pass

        @property
        def size(self):
            return 1

        def compiled(self):
            pass

        compiled = torch.compile(compiled)

        @functools.cached_property
        def lazy(self):
            return 1
"""


@pytest.mark.parametrize(
    ("dotted", "found"),
    [
        ("plain.__name__", True),
        ("plain.cache_clear", False),  # a cache_clear() on it raises AttributeError
        ("plain.__wrapped__", False),  # only a wrapper has it
        ("plain.__type_params__", None),  # a later Python adds it
        ("cached.cache_clear", True),
        ("cached.__wrapped__", True),
        ("cached_call.cache_info", True),
        ("cached.registry", False),
        ("wrapped.cache_clear", None),  # the decorator may return anything
        ("wrapped.__name__", None),
        ("tagged.registry", None),  # its module sets attributes on it
        ("rebound.cache_clear", None),  # the name holds what the call returned
        ("Config.compiled.cache_clear", None),
        ("Config.method.__code__", True),
        ("Config.method.cache_clear", False),
        ("Config.method.__func__", None),  # through an instance, a bound method has it
        ("Config.build.__func__", True),
        ("Config.size.fget", True),
        ("Config.size.cache_clear", False),
        ("Config.lazy.fget", None),  # not a property object
    ],
)
def test_an_attribute_of_a_function_is_read_off_pythons_tables(dotted, found):
    tree = package("pkg", {"pkg/__init__.py": "", "pkg/utils.py": UTILS})
    assert tree.lookup(f"pkg.utils.{dotted}").found is found
