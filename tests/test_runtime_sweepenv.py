"""The sweep's environment rule: nearest pin set, companions swapped by declared requirements."""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement
from runtime_fakes import make_set

from canary.errors import ConfigError, InfrastructureError
from canary.runtime.metadata import parse_requires
from canary.runtime.sweepenv import accepts, environment_for, nearest_set

RELEASES = ["4.46.1", "4.47.0", "4.50.0", "4.52.4", "4.53.0", "4.56.0", "4.57.6", "5.0.0"]
SETS = [
    make_set("floor", transformers="4.46.1", trl="0.12.2", peft="0.15.0"),
    make_set("window", transformers="4.50.0", trl="0.18.2", peft="0.15.0"),
    make_set("oldest", transformers="4.57.6", trl="0.25.1", peft="0.18.0"),
]
# What each companion declares (a fake index): trl's transformers bounds drive the swaps.
DECLARED = {
    ("trl", "0.12.2"): ["transformers<4.47.0", "accelerate>=0.34"],
    ("trl", "0.18.2"): ["transformers>=4.50.0", "accelerate>=0.34"],
    ("trl", "0.25.1"): ["transformers>=4.56.1", "accelerate>=1.4"],
    ("peft", "0.15.0"): ["transformers", "accelerate>=0.21"],
    ("peft", "0.18.0"): ["transformers", "accelerate>=0.21"],
    ("transformers", "4.46.1"): ["tokenizers<0.21", "accelerate>=0.26; extra == 'torch'"],
}


def metadata(name: str, version: str) -> list[Requirement]:
    return [Requirement(line) for line in DECLARED.get((name, version), [])]


def rule(release: str, sets=SETS):
    return environment_for("transformers", release, sets, metadata, RELEASES)


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        ("4.46.1", "floor"),  # a pin itself
        ("4.47.0", "floor"),  # one release above floor, two below window
        ("4.52.4", "window"),
        ("4.56.0", "oldest"),  # counted in releases: 4.57.6 is 1 away, 4.50.0 is 3
        ("4.53.0", "window"),  # 2 from each: the tie goes below
        ("5.0.0", "oldest"),  # above every pin
    ],
)
def test_base_is_the_nearest_pin_in_release_order(release, expected):
    assert nearest_set("transformers", release, SETS, RELEASES).name == expected


def test_a_tie_goes_to_the_set_at_or_below():
    sets = [make_set("low", transformers="4.46.1"), make_set("high", transformers="4.50.0")]
    # 4.47.0 is one release from each.
    assert nearest_set("transformers", "4.47.0", sets, ["4.46.1", "4.47.0", "4.50.0"]).name == "low"


def test_a_package_no_set_pins_is_a_config_error():
    with pytest.raises(ConfigError, match="no \\[runtime\\] pin set pins nothing"):
        nearest_set("nothing", "1.0", SETS)


def test_companions_that_accept_the_release_keep_the_base_pins():
    env = rule("5.0.0")
    assert env.base.name == "oldest"
    assert not env.swapped
    assert env.problem is None
    assert env.overlay == {"transformers": "5.0.0"}
    assert env.pins["trl"] == "0.25.1"


def test_a_rejecting_companion_becomes_the_newest_pinned_that_accepts():
    # trl 0.25.1 needs >=4.56.1; the newest other pinned trl that takes 4.56.0 is 0.18.2.
    env = rule("4.56.0")
    assert env.base.name == "oldest"
    assert env.swapped == {"trl": ("0.25.1", "0.18.2")}
    assert env.overlay == {"transformers": "4.56.0", "trl": "0.18.2"}
    assert "swapped trl 0.25.1 -> 0.18.2" in env.line()


def test_a_swap_takes_the_pinned_version_nearest_the_base_pin_not_the_newest():
    sets = [*SETS, make_set("newest", transformers="5.0.0", trl="1.16.0", peft="0.17.1")]
    declared = {**DECLARED, ("trl", "1.16.0"): ["transformers>=4.56"]}

    def meta(name, version):
        return [Requirement(line) for line in declared.get((name, version), [])]

    # trl 0.25.1 rejects 4.56.0; 1.16.0 and 0.18.2 both accept it and are one step away:
    # the newer wins the tie. Without 1.16.0 accepting, the older neighbour is next.
    env = environment_for("transformers", "4.56.0", sets, meta, RELEASES)
    assert env.swapped == {"trl": ("0.25.1", "1.16.0")}
    declared[("trl", "1.16.0")] = ["transformers>=4.57"]
    env = environment_for("transformers", "4.56.0", sets, meta, RELEASES)
    assert env.swapped == {"trl": ("0.25.1", "0.18.2")}


def test_an_optional_companion_nobody_pins_for_the_release_is_left_out():
    # 4.47.0: trl 0.12.2 wants <4.47, 0.18.2 and 0.25.1 want newer.
    env = rule("4.47.0")
    assert env.problem is None
    assert "trl" not in env.pins
    assert "no pinned trl" in env.left_out["trl"]
    assert "without trl" in env.line()


def test_a_required_companion_nobody_pins_for_the_release_means_no_environment():
    peft_wants = {("peft", v): ["transformers>=9"] for v in ("0.15.0", "0.18.0")}
    declared = {**DECLARED, **peft_wants}

    def strict(name, version):
        return [Requirement(line) for line in declared.get((name, version), [])]

    env = environment_for("transformers", "5.0.0", SETS, strict, RELEASES)
    assert env.problem
    assert "no pinned peft" in env.problem
    assert "NO ENVIRONMENT" in env.line()


def test_companions_are_checked_against_each_other_not_only_the_release():
    declared = {**DECLARED, ("trl", "0.25.1"): ["accelerate>=99"]}

    def picky(name, version):
        return [Requirement(line) for line in declared.get((name, version), [])]

    # accelerate 1.13.0 (decided first, name order) is rejected by trl 0.25.1: trl swaps.
    env = environment_for("transformers", "5.0.0", SETS, picky, RELEASES)
    assert env.swapped == {"trl": ("0.25.1", "0.18.2")}


def test_the_swept_release_requirements_count_too():
    declared = {**DECLARED, ("transformers", "5.0.0"): ["peft>=0.16"]}

    def wants_new_peft(name, version):
        return [Requirement(line) for line in declared.get((name, version), [])]

    env = environment_for("transformers", "5.0.0", [SETS[1]], wants_new_peft, RELEASES)
    assert env.problem
    assert "peft" in env.problem


def test_an_undeclared_requirement_swaps_the_companion_too():
    # peft 0.17.1 declares transformers unbounded, but imports HybridCache (gone in 5.0.0).
    sets = [
        make_set("oldest", transformers="4.57.6", trl="0.25.1", peft="0.17.1"),
        make_set("later", transformers="5.5.3", trl="1.4.0", peft="0.19.1"),
    ]
    releases = [*RELEASES, "5.5.3"]
    env = environment_for("transformers", "5.0.0", sets, metadata, releases)
    assert env.base.name == "oldest"
    assert env.swapped == {"peft": ("0.17.1", "0.19.1")}
    # Below 5.0.0 it stays.
    assert environment_for("transformers", "4.57.6", sets, metadata, releases).swapped == {}


def test_extras_and_markers_do_not_bind():
    # transformers 4.46.1 wants accelerate>=0.26 only under the torch extra.
    assert accepts(metadata, "transformers", "4.46.1", "accelerate", "0.1")
    assert not accepts(metadata, "transformers", "4.46.1", "tokenizers", "0.21.0")


def test_metadata_text_is_parsed_and_bad_lines_name_the_release():
    text = "Metadata-Version: 2.1\nName: trl\nRequires-Dist: transformers>=4.56.1\n\n"
    assert [str(r) for r in parse_requires(text, "trl 0.25.1")] == ["transformers>=4.56.1"]
    with pytest.raises(InfrastructureError, match=r"trl 0\.25\.1: unreadable Requires-Dist"):
        parse_requires("Requires-Dist: ((\n", "trl 0.25.1")


def test_case_id_is_the_project_id_form():
    assert rule("4.57.6").case_id == "transformers_4_57_6"
