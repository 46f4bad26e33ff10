"""The fixes' release windows follow canary's one version rule: a pre-release, dev build or
local build of X belongs to X (``canary.versions.within``), as every check window does.

Plain PEP 440 (``SpecifierSet.contains``) put ``5.5.4.dev0`` inside ``<5.5.4`` and
``5.2.0.dev0`` outside ``>=5.2.0``: a source checkout building 5.5.4 would have been clamped
as if it were 5.5.3, and one building 5.2.0 left unclamped.
"""

from __future__ import annotations

import pytest
from packaging.version import InvalidVersion, Version

from canary.fixes.accepts_loss_kwargs import COUNT_WITHHELD_WINDOW, NO_DIVISION_WINDOW
from canary.fixes.grad_accum_clamp import DOUBLE_DIVISION_WINDOW, in_double_division_window
from canary.versions import Window


@pytest.mark.parametrize(
    ("version", "inside"),
    [
        ("5.1.0", False),
        ("5.2.0.dev0", True),  # building 5.2.0: 5.2.0's shape
        ("5.2.0rc1", True),
        ("5.2.0", True),
        ("5.5.3", True),
        ("5.5.3.post1", True),
        ("5.5.4.dev0", False),  # building 5.5.4, which passes num_steps=1
        ("5.5.4rc1", False),
        ("5.5.4+local", False),
        ("5.5.4", False),
    ],
)
def test_double_division_window(version: str, inside: bool) -> None:
    assert in_double_division_window(version) is inside
    assert (version in DOUBLE_DIVISION_WINDOW) is inside


@pytest.mark.parametrize(
    ("version", "inside"),
    [
        ("4.45.2", False),
        ("4.46.0rc1", True),
        ("4.46.0", True),  # multiplies by the steps, Accelerate divides: net no division
        ("4.46.1", True),
        ("4.47.1", True),  # no plugin, no division
        ("4.48.0.dev0", False),  # building 4.48.0, which divides
        ("4.48.0", False),
    ],
)
def test_no_division_window(version: str, inside: bool) -> None:
    assert NO_DIVISION_WINDOW.contains(version) is inside


@pytest.mark.parametrize(
    ("version", "inside"),
    [
        ("4.46.3", False),
        ("4.47.0.dev0", True),
        ("4.47.0", True),
        ("4.47.1", False),  # dropped the inverted condition
        ("4.48.0", True),  # brought it back
        ("4.48.1", False),  # dropped it again
        ("5.0.0", False),
    ],
)
def test_count_withheld_window_is_4_47_0_and_4_48_0(version: str, inside: bool) -> None:
    assert COUNT_WITHHELD_WINDOW.contains(version) is inside
    assert (version in COUNT_WITHHELD_WINDOW) is inside


def test_windows_print_as_their_specifiers() -> None:
    assert str(COUNT_WITHHELD_WINDOW) == ">=4.47.0,<4.47.1 or >=4.48.0,<4.48.1"


def test_a_window_prints_as_a_specifier() -> None:
    # The catalog's drift message quotes the clamp's window.
    assert str(DOUBLE_DIVISION_WINDOW) == ">=5.2.0,<5.5.4"
    assert str(Window("4.52.1")) == ">=4.52.1"
    assert str(Window(until="4.48.0")) == "<4.48.0"
    assert str(Window()) == "every release"


def test_a_window_takes_parsed_versions() -> None:
    assert Window("5.2.0", "5.5.4").contains(Version("5.3.0"))
    assert not Window("5.2.0", "5.5.4").contains(Version("5.5.4.dev0"))


def test_a_bad_bound_fails_where_the_window_is_defined() -> None:
    with pytest.raises(InvalidVersion):
        Window("five")


def test_a_non_version_is_an_error_not_outside() -> None:
    # transformers.__version__ is always a version; anything else is a bug to surface.
    with pytest.raises(InvalidVersion):
        DOUBLE_DIVISION_WINDOW.contains("main")
