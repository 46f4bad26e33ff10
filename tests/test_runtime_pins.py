"""Pin sets: the [runtime.<name>] tables of tags.toml, validated."""

from __future__ import annotations

import textwrap

import pytest
from runtime_fakes import PINS, make_set

from canary.errors import ConfigError
from canary.runtime.pins import load_pin_sets, parse_pin_sets, select


def test_pin_set_parses_and_normalises_names():
    pin_set = parse_pin_sets(
        {"oldest": {"summary": " oldest ", "pins": {**PINS, "Safe_Tensors": "0.8.0"}}}, "t.toml"
    )["oldest"]
    assert pin_set.summary == "oldest"
    assert list(pin_set.pins) == sorted(pin_set.pins)
    assert "safe-tensors==0.8.0" in pin_set.requirements()
    assert "torch==2.13.0" in pin_set.requirements()


def test_missing_torch_says_why_it_must_be_pinned():
    pins = {k: v for k, v in PINS.items() if k != "torch"}
    with pytest.raises(ConfigError) as excinfo:
        parse_pin_sets({"oldest": {"summary": "s", "pins": pins}}, "tags.toml")
    message = str(excinfo.value)
    assert "tags.toml: [runtime.oldest]" in message
    assert "torch" in message
    assert "CUDA" in message


@pytest.mark.parametrize("value", [">=4.57", "==4.57.6", "4.57.*", "latest", 4.57, ""])
def test_pins_must_be_exact_versions(value):
    with pytest.raises(ConfigError, match=r"tags\.toml: \[runtime\.oldest\]: pins\.transformers"):
        parse_pin_sets(
            {"oldest": {"summary": "s", "pins": {**PINS, "transformers": value}}}, "tags.toml"
        )


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ({"summary": "s", "pins": PINS, "python": "3.11"}, r"unknown key\(s\) \['python'\]"),
        ({"pins": PINS}, "summary must be a non-empty string"),
        ({"summary": "s"}, "pins must be a table"),
        ({"summary": "s", "pins": {**PINS, "PEFT": "0.17.1"}}, "peft is pinned twice"),
        ({"summary": "s", "pins": {**PINS, "no good": "1.0"}}, "not a valid package name"),
        ({"summary": "s", "pins": PINS, "requires-python": "3.11+"}, "requires-python"),
    ],
)
def test_bad_pin_set_tables_name_the_key(table, expected):
    with pytest.raises(ConfigError, match=expected):
        parse_pin_sets({"oldest": table}, "tags.toml")


def test_runtime_holds_only_tables_with_folder_safe_names():
    with pytest.raises(ConfigError, match="key 'default' is not a pin set table"):
        parse_pin_sets({"default": "oldest"}, "tags.toml")
    with pytest.raises(ConfigError, match="name must match"):
        parse_pin_sets({"Old Set": {"summary": "s", "pins": PINS}}, "tags.toml")
    with pytest.raises(ConfigError, match="at least one"):
        parse_pin_sets({}, "tags.toml")


def test_load_pin_sets_reads_the_file(tmp_path):
    path = tmp_path / "tags.toml"
    path.write_text(
        textwrap.dedent(
            """
            [packages.x]
            repo = "a/b"

            [runtime.newest]
            summary = "newest"
            requires-python = ">=3.11"
            [runtime.newest.pins]
            torch = "2.13.0"
            transformers = "5.24.0"
            trl = "1.16.0"
            peft = "0.21.2"
            accelerate = "1.16.0"
            datasets = "5.2.0"
            """
        )
    )
    (newest,) = load_pin_sets(path).values()
    assert newest.pins["transformers"] == "5.24.0"
    assert newest.python_mismatch("3.10.14") == "needs Python >=3.11, this is 3.10.14"
    assert newest.python_mismatch("3.11.7") is None


def test_load_pin_sets_errors(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_pin_sets(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("[runtime\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_pin_sets(tmp_path / "bad.toml")
    (tmp_path / "none.toml").write_text("[packages.x]\n")
    with pytest.raises(ConfigError, match=r"none\.toml: no \[runtime\] section"):
        load_pin_sets(tmp_path / "none.toml")


def test_select():
    sets = {"a": make_set("a"), "b": make_set("b")}
    assert [s.name for s in select(sets, "all")] == ["a", "b"]
    assert [s.name for s in select(sets, "b,a,b")] == ["b", "a"]
    with pytest.raises(ConfigError, match="unknown pin set"):
        select(sets, "c")
    with pytest.raises(ConfigError, match="at least one"):
        select(sets, " , ")
