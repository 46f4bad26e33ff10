"""The one version rule: a pre-release of X belongs to X (windows, lists, report order)."""

from __future__ import annotations

import pytest
from packaging.version import Version

from canary.catalog import Window
from canary.versions import is_commit, listed_for, parse, release_of, report_order, within

SHA = "f2cd57710ae345ea6428ae95363267fcf38a3dc8"


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("1.15.0.dev0", "1.15.0"),
        ("1.15.0rc1", "1.15.0"),
        ("1.15.0a2.dev1", "1.15.0"),
        ("1.15.0+local.3", "1.15.0"),
        ("1.15.0", "1.15.0"),
        ("1.15.0.post1", "1.15.0.post1"),
    ],
)
def test_a_pre_release_dev_release_or_local_build_belongs_to_its_release(text, release):
    assert release_of(Version(text)) == Version(release)


def test_a_split_at_x_puts_x_dev0_in_the_new_shape_only():
    # PEP 440 alone puts 1.15.0.dev0 in neither half: both checks would skip it.
    old, new = Window(until="1.15.0"), Window(since="1.15.0")
    version = Version("1.15.0.dev0")
    assert (old.excludes(version), new.excludes(version)) == (True, False)
    assert within(Version("1.14.9"), None, "1.15.0")
    assert not within(Version("1.15.0rc1"), "1.14.0", "1.15.0")


def test_listed_entries_apply_exactly_to_their_release_and_loosely_to_its_pre_releases():
    listed = {"5.24.0": "no modeling_attn_mask_utils.py"}
    assert listed_for(listed, "5.24.0", Version("5.24.0")) == (listed["5.24.0"], True)
    assert listed_for(listed, "main", Version("5.24.0.dev0")) == (listed["5.24.0"], False)
    assert listed_for(listed, "5.24.0rc1", Version("5.24.0rc1")) == (listed["5.24.0"], False)
    assert listed_for(listed, "5.24.1", Version("5.24.1")) == ("", False)
    assert listed_for(listed, "main", None) == ("", False)


def test_branch_trees_sort_after_every_release_whatever_they_declare():
    # peft main declaring 0.17.2.dev0 while 0.18.0 is out once sorted between them.
    labels = [("main", "0.17.2.dev0"), ("0.18.0", "0.18.0"), ("0.17.1", "0.17.1")]
    ordered = sorted(labels, key=lambda lv: report_order(*lv))
    assert [label for label, _ in ordered] == ["0.17.1", "0.18.0", "main"]
    assert report_order(SHA, "0.17.2.dev0") > report_order("0.18.0", "0.18.0")


def test_a_commit_id_is_not_a_version():
    assert is_commit(SHA)
    assert not is_commit(SHA[:12])
    assert not is_commit(SHA.upper())
    assert parse(SHA) is None
    assert parse("main") is None
    assert parse("1.2.0") == Version("1.2.0")
    # 40 decimal digits would otherwise parse as a (huge) release number.
    assert parse("1" * 40) is None
