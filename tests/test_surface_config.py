"""``[tool.canary.surface]``: reading it, and bad input named with its fix."""

from __future__ import annotations

import textwrap

import pytest

from canary.errors import ConfigError
from canary.surface.config import load_config
from canary.surface.model import Kind, Reference, Site

PYPROJECT = """\
[project]
name = "x"

[tool.canary.surface]
own_attributes = ["_x_*"]
exclude = ["templates/*"]

[[tool.canary.surface.expected_absent]]
target = "transformers.models.*.modeling_*.FlashAttention2"
package = "transformers"
versions = ">=4.48"
kind = "attribute"
reason = "removed in 4.48; the fallback handles it"

[[tool.canary.surface.expected_absent]]
target = "trl.trainer.utils.*"
reason = "optional"
"""


def reference(target: str, kind: Kind = Kind.ATTRIBUTE) -> Reference:
    return Reference(target.split(".", maxsplit=1)[0], target, kind, (Site("m.py", 1),))


def test_pyproject_table(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text(PYPROJECT)
    config = load_config(path)
    assert config.own_attributes == ("_x_*",)
    assert config.excludes("templates/a.py")
    assert not config.excludes("pkg/a.py")
    flash = reference("transformers.models.llama.modeling_llama.FlashAttention2")
    entry = config.accepted(flash, "4.48.0")
    assert entry is not None
    assert entry.reason.startswith("removed in 4.48")
    assert config.accepted(flash, "4.47.1") is None  # outside its versions
    assert config.accepted(flash, "main") is None  # not a release a range speaks of
    patch = reference("transformers.models.llama.modeling_llama.FlashAttention2", Kind.PATCH)
    assert config.accepted(patch, "4.50.0") is None  # another kind
    assert config.accepted(reference("trl.trainer.utils.pad"), "0.1.0") is not None


def test_a_pyproject_without_the_table_is_an_empty_config(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n')
    config = load_config(path)
    assert config.expected_absent == ()
    assert config.origin == str(path)


def test_a_file_of_its_own_may_hold_the_keys_at_top_level(tmp_path):
    path = tmp_path / "surface.toml"
    path.write_text('own_attributes = ["_mine"]\n')
    assert load_config(path).own_attributes == ("_mine",)


def test_version_parsers_are_read_as_given(tmp_path):
    path = tmp_path / "surface.toml"
    path.write_text('version_parsers = ["unsloth_zoo.utils.Version", "mypkg.v.parse"]\n')
    assert load_config(path).version_parsers == ("unsloth_zoo.utils.Version", "mypkg.v.parse")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("owned = []", r"unknown key 'owned' in \[tool.canary.surface\]; the keys are"),
        ("own_attributes = 'x'", r"own_attributes .* must be a list of non-empty strings"),
        ("expected_absent = 1", r"must be an array of tables"),
        ("[[expected_absent]]\ntarget = 'a.b'", r"expected_absent\[0\]: reason is required"),
        ("[[expected_absent]]\nreason = 'r'", r"expected_absent\[0\]: target is required"),
        (
            "[[expected_absent]]\ntarget = 'a'\nreason = 'r'\nversions = 'new'",
            r"versions 'new' is not a version specifier",
        ),
        (
            "[[expected_absent]]\ntarget = 'a'\nreason = 'r'\nkind = 'symbol'",
            r"kind 'symbol' is not one of import, attribute",
        ),
        (
            "[[expected_absent]]\ntarget = 'a'\nreason = 'r'\nwhy = 'x'",
            r"expected_absent\[0\]: unknown key 'why'",
        ),
        ("own_attributes = [", r"not valid TOML"),
        (
            "version_parsers = 'mypkg.Version'",
            r"version_parsers .* must be a list of dotted names.*\"mypkg.utils.Version\"",
        ),
        ("version_parsers = ['Version']", r"version_parsers .*; 'Version' is not one"),
        ("version_parsers = ['mypkg.utils.Version()']", r"'mypkg.utils.Version\(\)' is not one"),
    ],
)
def test_bad_input_names_the_key_and_the_fix(tmp_path, text, message):
    path = tmp_path / "surface.toml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(ConfigError, match=message) as raised:
        load_config(path)
    assert str(path) in str(raised.value)


def test_an_unreadable_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the surface configuration"):
        load_config(tmp_path / "absent.toml")
