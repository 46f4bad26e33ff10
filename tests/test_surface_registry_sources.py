"""A source registry with several sources: which one is read is decided per release (the
first whose class exists; a forwarding shim read as its later base), each source's anchors
are references of their own."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from surface_fakes import moved_class_trees, workspace

from canary import symbols
from canary.errors import ConfigError
from canary.surface.config import config_from_table, load_config
from canary.surface.extract import survey
from canary.surface.findings import findings
from canary.surface.model import (
    NOT_READ,
    Kind,
    Match,
    Outcome,
    ReadFrom,
    Reference,
    Resolved,
    Site,
    Target,
)
from canary.surface.resolve import resolve
from canary.workspace import Case

OLD, NEW = "toy.trainer.bt.BTrainer", "toy.exp.bt.BTrainer"
ENTRY = {
    "registry": "pkg.rl.FUNCS",
    "parameter": "source",
    "selector": "name",
    "source": ["trl.trainer.{key}.{class}.{name}", "trl.experimental.{short}.{key}.{class}.{name}"],
    "classes": {"bt": "BTrainer", "gt": "GTrainer"},
    "placeholders": {"short": {"bt": "b"}},
    "follow_shims": True,
}


def registry(**changes):
    (found,) = config_from_table(
        {"source_registries": [{**ENTRY, **changes}]}, origin="t.toml"
    ).source_registries
    return found


def test_a_template_is_tried_for_the_keys_its_placeholders_have():
    assert registry().sources_of("bt") == (
        "trl.trainer.bt.BTrainer.{name}",
        "trl.experimental.b.bt.BTrainer.{name}",
    )
    assert registry().sources_of("gt") == ("trl.trainer.gt.GTrainer.{name}",)  # no {short}
    assert registry().sources_of("zt") == ()  # no {class} either


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"source": ["trl.trainer.{key}.{class}.{name}"]}, "follow_shims reads a class"),
        ({"source": ["trl.{key}.{class}.{name}", "trl.{stem}.{name}"]}, "has {stem}"),
        ({"placeholders": {"class": {"bt": "X"}}}, "placeholders.class is not one"),
        ({"placeholders": {"short": "b"}}, "placeholders.short must be a table"),
        ({"follow_shims": "yes"}, "follow_shims must be true or false"),
        ({"source": []}, "source is required"),
    ],
)
def test_a_bad_list_of_sources_names_the_key_and_the_fix(changes, message):
    with pytest.raises(ConfigError, match=message):
        registry(**changes)


def test_each_source_gives_its_own_anchor_read_from_all_of_them_in_order(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/rl.py": """\
            from collections import defaultdict
            FUNCS = defaultdict(list)

            def fix(name, source):
                if name != "train":
                    return source
                return source.replace("step()", "fast_step()")

            FUNCS["bt"].append(fix)
            FUNCS["gt"].append(fix)
            """,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    found = survey(tmp_path, sorted(files), upstream=("trl",), registries=[registry()])
    anchors = {r.target: r.read_from for r in found.references if r.kind is Kind.ANCHOR}
    both = ReadFrom(("trl.trainer.bt.BTrainer", "trl.experimental.b.bt.BTrainer"), True)
    assert anchors == {
        "trl.trainer.bt.BTrainer.train": both,
        "trl.experimental.b.bt.BTrainer.train": both,
        "trl.trainer.gt.GTrainer.train": None,  # one source: read there, as before
    }


def decide(tmp_path: Path, layouts: tuple[str, ...], *, follow_shims: bool = True):
    """Both sources' anchor ``step()`` on ``train``, on one release per layout."""
    trees = moved_class_trees(*layouts)
    read_from = ReadFrom((OLD, NEW), follow_shims)
    refs = [
        Reference("toy", f"{owner}.train", Kind.ANCHOR, (Site("p.py", 1),), "step()", Match.EXACT,
                  read_from)
        for owner in (OLD, NEW)
    ]  # fmt: skip
    cases = {"toy": [Case("toy", label, "index") for label in trees]}
    found = resolve(
        refs,
        cases,
        workspace(tmp_path, trees),
        make_tree=symbols.PackageTree,
    )
    return [{v: (o.value, r.why.get(v, "")) for v, o in r.outcomes.items()} for r in found]


def outcomes(decided: dict[str, tuple[str, str]]) -> list[str]:
    return [outcome for outcome, _ in decided.values()]


def test_the_first_source_whose_class_exists_is_read_the_other_is_not(tmp_path):
    old, new = decide(tmp_path, ("old", "new"))
    assert outcomes(old) == outcomes(new) == ["ok", "ok"]
    assert old["2.0"][1] == f"{NOT_READ}: {NEW} is read instead"
    assert new["1.0"][1] == f"{NOT_READ}: {OLD} is read instead"
    assert old["1.0"][1] == new["2.0"][1] == ""  # read, and the anchor is there


def test_a_shim_is_read_as_its_later_base_only_with_follow_shims(tmp_path):
    # the shim's own train() has no step(): read, it would be missing
    (old,), (new,) = (d.values() for d in decide(tmp_path, ("shim",)))
    assert old == ("ok", f"{NOT_READ}: {NEW} is read instead")
    assert new == ("ok", "")
    (old,), (new,) = (d.values() for d in decide(tmp_path / "plain", ("shim",), follow_shims=False))
    assert old[0] == "missing"  # the shim's own train() is what getsource gives
    assert new == ("ok", f"{NOT_READ}: {OLD} is read instead")


def test_where_no_source_has_the_class_none_is_read(tmp_path):
    for decided in decide(tmp_path, ("gone",)):
        assert decided["1.0"] == ("ok", f"{NOT_READ}: none of {OLD}, {NEW} is there")


def test_a_miss_in_the_source_read_stays_a_miss(tmp_path):
    trees = moved_class_trees("new")
    trees["1.0"]["toy/exp/bt.py"] = b"class BTrainer:\n    def train(self):\n        pass\n"
    refs = [
        Reference("toy", f"{NEW}.train", Kind.ANCHOR, (), "step()", Match.EXACT,
                  ReadFrom((OLD, NEW)))
    ]  # fmt: skip
    cases = {"toy": [Case("toy", "1.0", "index")]}
    (found,) = resolve(
        refs,
        cases,
        workspace(tmp_path, trees),
        make_tree=symbols.PackageTree,
    )
    assert found.outcomes == {"1.0": Outcome.MISSING}


def test_where_it_is_read_from_keys_the_reference_and_survives_json():
    plain = Reference("toy", f"{NEW}.train", Kind.ANCHOR, (), "step()", Match.EXACT)
    moved = Reference("toy", f"{NEW}.train", Kind.ANCHOR, (), "step()", Match.EXACT,
                      ReadFrom((OLD, NEW), True))  # fmt: skip
    assert len(plain.key) == 4  # a plain key is as before: what was remembered applies
    assert plain.key != moved.key
    again = Resolved.from_json(Resolved(moved, {"1.0": Outcome.OK}).to_json())
    assert again.reference == moved


def test_the_unsloth_example_reads_trainers_where_unsloth_does():
    example = Path(__file__).parent.parent / "examples" / "unsloth-surface.toml"
    (rl,) = load_config(example).source_registries
    assert rl.follow_shims
    assert rl.sources_of("bco_trainer") == (
        "trl.trainer.bco_trainer.BCOTrainer.{name}",
        "trl.experimental.bco.bco_trainer.BCOTrainer.{name}",
    )
    assert rl.sources_of("grpo_trainer") == ("trl.trainer.grpo_trainer.GRPOTrainer.{name}",)


def test_a_miss_before_the_first_release_that_reads_it_and_has_it_came_later():
    moved = Reference("toy", f"{NEW}.train", Kind.ANCHOR, (Site("p.py", 1),), "step()",
                      Match.EXACT, ReadFrom((OLD, NEW)))  # fmt: skip
    outcomes = {"1.0": Outcome.OK, "2.0": Outcome.MISSING, "3.0": Outcome.OK}
    why = {"1.0": f"{NOT_READ}: {OLD} is read instead", "2.0": "no step()"}
    (finding,) = findings([Resolved(moved, outcomes, why)], Target("proj", "1"))
    assert finding.since == "3.0"  # 1.0 is ok only because nothing reads it there
    assert finding.came_later == ("2.0",)
