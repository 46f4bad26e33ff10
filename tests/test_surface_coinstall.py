"""Which upstream releases can be installed beside the project, from both sides'
``Requires-Dist``: a shared dependency whose requirements leave no version."""

from __future__ import annotations

import pytest

from canary.surface.coinstall import conflict, core_requirements, disjoint, metadata_requirements


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


def test_only_core_requirements_with_a_range_count():
    lines = [
        "huggingface-hub<1.0,>=0.34.0",
        "Huggingface_Hub!=0.35.0",
        "numpy>=1.17",
        "torch",  # no range: conflicts with nothing
        "accelerate>=0.26.0; extra == 'torch'",
        "pywin32>=300; sys_platform == 'win32'",
        "not a requirement (",
    ]
    assert core_requirements(lines) == {
        "huggingface-hub": "!=0.35.0,<1.0,>=0.34.0",
        "numpy": ">=1.17",
    }


def test_the_first_shared_dependency_without_a_common_version_is_the_conflict():
    project = metadata_requirements(
        "Name: diffusers\nRequires-Dist: huggingface-hub<3.0,>=1.32.0\nRequires-Dist: numpy\n"
    )
    old = {"huggingface-hub": "<1.0,>=0.34.0", "numpy": ">=1.17"}
    new = {"huggingface-hub": "<2.0,>=1.0.0"}
    assert conflict(project, old) == "huggingface-hub: <3.0,>=1.32.0 against <1.0,>=0.34.0"
    assert conflict(project, new) is None
