"""Version specifiers read as intervals: disjoint pairs, and the range holding several."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from canary.surface.intervals import disjoint, hull


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        (">=1.32.0,<3.0", "<1.0,>=0.34.0", True),  # diffusers 0.42.1 and transformers 4.57
        (">=1.32.0,<3.0", "<2.0,>=1.0.0", False),  # and transformers 5.x
        ("<0.34,>=0.30.0", ">=1.0.0,<2.0", True),  # llm-foundry and transformers 5.x
        (">=1.0", "<1.0", True),
        (">=1.0", "<=1.0", False),  # 1.0 itself
        (">1.0", "<=1.0", True),
        ("==1.2.*", ">=1.3", True),
        ("==1.2.*", ">=1.2.9", False),
        ("~=1.4.2", ">=1.5", True),
        ("~=1.4.2", "<1.4.3", False),
        ("~=1.6", ">=2.0", True),  # abliterix's huggingface-hub~=1.6
        ("==1.0", "!=1.0", False),  # != narrows nothing read: never a claimed conflict
        ("", "<1.0", False),
        ("not a specifier", "<1.0", False),
    ],
)
def test_specifiers_conflict_only_where_their_intervals_are_disjoint(first, second, expected):
    assert disjoint(first, second) is expected
    assert disjoint(second, first) is expected


@pytest.mark.parametrize(
    ("specifiers", "expected"),
    [
        ([">=4.57.1", ">=5.20.0", ">=5.5.0"], ">=4.57.1"),  # stateset-agents' extras
        (["<2.0.0,>=0.14.0", "<2,>=1.14.0"], "<2.0.0,>=0.14.0"),
        ([">=0.18,<1", ">=0.21"], ">=0.18"),  # one extra with no ceiling: none
        ([">1.0", ">=1.0"], ">=1.0"),  # 1.0 itself is in one of them
        (["<1.0", "<=1.0"], "<=1.0"),
        (["<4.50", ">=5.0,<6"], "<6"),  # a gap between them is held too: never narrower
        (["==1.2.*", "==1.4"], ">=1.2,<=1.4"),
        (["==1.4", "==1.4"], "==1.4"),
        (["!=1.3", ">=1.0"], None),  # != narrows nothing read
        ([">=1.0", ""], None),
        ([], None),
    ],
)
def test_the_hull_holds_every_version_any_of_them_admits(specifiers, expected):
    spanned = hull(SpecifierSet(s) for s in specifiers)
    assert spanned == (None if expected is None else SpecifierSet(expected))
