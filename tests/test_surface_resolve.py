"""Resolution of a surface against releases: outcomes, anchors as the project applies them,
results remembered by the digests of the files they were decided from, errors by case."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from surface_fakes import FakeTree, Source, workspace

from canary.cache import Cache
from canary.errors import ConfigError, FetchError
from canary.surface.anchors import anchor_outcome, getsource_text
from canary.surface.baseline import load_baseline, write_baseline
from canary.surface.findings import findings, in_range
from canary.surface.memo import Memo, TextsMemo
from canary.surface.model import (
    TEXT_GONE,
    Kind,
    Match,
    Outcome,
    Reference,
    Resolved,
    Site,
    Target,
)
from canary.surface.resolve import _CaseFiles, candidate_paths, resolve, resolve_case
from canary.workspace import Case, FetchPolicy, Workspace

TRAINER_V1 = b"""\
from torch import nn


class Trainer:
    def compute_loss(self, model, inputs):
        loss = model(**inputs).loss
        return loss / self.args.gradient_accumulation_steps

    def train(self):
        pass
"""
# 2.0 renamed compute_loss and reformatted the division.
TRAINER_V2 = TRAINER_V1.replace(b"compute_loss", b"_compute_loss").replace(
    b"loss / self", b"loss /  self"
)
INIT = b"from .trainer import Trainer\n"


@pytest.fixture(autouse=True)
def _count_lookups():
    FakeTree.lookups = []


def ref(target: str, kind: Kind = Kind.ATTRIBUTE, anchor=None, match=None) -> Reference:
    return Reference("toy", target, kind, (Site("proj/patch.py", 3),), anchor, match)


TREES = {
    "1.0": {"toy/__init__.py": INIT, "toy/trainer.py": TRAINER_V1},
    "1.1": {"toy/__init__.py": INIT, "toy/trainer.py": TRAINER_V1},
    "2.0": {"toy/__init__.py": INIT, "toy/trainer.py": TRAINER_V2},
}
CASES = {"toy": [Case("toy", label, "index") for label in TREES]}


def test_outcomes_per_release_say_what_is_there(tmp_path):
    refs = [
        ref("toy.trainer.Trainer.compute_loss", Kind.PATCH),
        ref("toy.trainer.Trainer.train"),
        ref("toy.trainer.nn.LayerNorm"),  # leaves the package at nn: never missing
        ref("toy.models.llama", Kind.IMPORT),
    ]
    ws = workspace(tmp_path, TREES)
    found = {r.reference.target: r for r in resolve(refs, CASES, ws, make_tree=FakeTree)}

    patch = found["toy.trainer.Trainer.compute_loss"]
    assert patch.outcomes == {"1.0": Outcome.OK, "1.1": Outcome.OK, "2.0": Outcome.MISSING}
    assert "compute_loss" in patch.why["2.0"]
    assert "_compute_loss" in patch.why["2.0"]  # the drift lists what is there instead
    assert set(patch.why) == {"2.0"}  # ok needs no why
    assert set(found["toy.trainer.Trainer.train"].outcomes.values()) == {Outcome.OK}
    assert set(found["toy.trainer.nn.LayerNorm"].outcomes.values()) == {Outcome.UNKNOWN}
    assert set(found["toy.models.llama"].outcomes.values()) == {Outcome.MISSING}


def test_only_the_references_of_the_case_package_are_resolved(tmp_path):
    other = Reference("peft", "peft.tuners.lora.LoraLayer", Kind.ATTRIBUTE, ())
    decided = resolve_case(
        [ref("toy.trainer.Trainer"), other],
        CASES["toy"][0],
        workspace(tmp_path, TREES),
        make_tree=FakeTree,
    )
    assert list(decided) == [ref("toy.trainer.Trainer").key]


DIVISION = "        return loss / self.args.gradient_accumulation_steps\n"


@pytest.mark.parametrize(
    ("anchor", "match", "expected"),
    [
        (DIVISION, Match.EXACT, ["ok", "missing"]),  # 2.0 reformatted: .replace is exact
        ("loss / self.args", Match.EXACT, ["ok", "missing"]),
        ("def compute_loss(self, model, inputs):\n    loss", Match.DEDENTED, ["ok", "ok"]),
        ("def compute_loss(self, model, inputs):\n    loss", Match.EXACT, ["missing", "missing"]),
        (r"return loss /\s+self\.args", Match.REGEX, ["ok", "ok"]),
        ("    def compute_loss", Match.EXACT, ["ok", "ok"]),  # inspect keeps the indent
    ],
)
def test_anchors_apply_as_the_project_applies_them(tmp_path, anchor, match, expected):
    anchored = ref("toy.trainer.Trainer.compute_loss", Kind.ANCHOR, anchor, match)
    trees = {"1.0": TREES["1.0"], "2.0": {**TREES["2.0"], "toy/trainer.py": TRAINER_V1}}
    trees["2.0"]["toy/trainer.py"] = TRAINER_V1.replace(b"loss / self", b"loss /  self")
    cases = {"toy": [Case("toy", "1.0", "index"), Case("toy", "2.0", "index")]}
    (found,) = resolve([anchored], cases, workspace(tmp_path, trees), make_tree=FakeTree)
    assert [found.outcomes[v].value for v in ("1.0", "2.0")] == expected
    if expected[1] == "missing":
        assert found.why["2.0"].startswith("Trainer.compute_loss (toy/trainer.py): ")


def test_an_anchor_on_a_renamed_function_is_missing_with_the_lookup_reason(tmp_path):
    anchored = ref("toy.trainer.Trainer.compute_loss", Kind.ANCHOR, "loss", Match.EXACT)
    (found,) = resolve([anchored], CASES, workspace(tmp_path, TREES), make_tree=FakeTree)
    assert found.outcomes["2.0"] is Outcome.MISSING
    assert "_compute_loss" in found.why["2.0"]


def test_an_anchor_on_a_module_reads_the_whole_file(tmp_path):
    anchored = ref("toy.trainer", Kind.ANCHOR, "from torch import nn\n", Match.EXACT)
    gone = ref("toy.trainer", Kind.ANCHOR, "import torch.nn as nn", Match.EXACT)
    found = resolve([anchored, gone], CASES, workspace(tmp_path, TREES), make_tree=FakeTree)
    assert set(found[0].outcomes.values()) == {Outcome.OK}
    assert set(found[1].outcomes.values()) == {Outcome.MISSING}


def test_a_name_read_through_a_star_import_is_there_only_where_the_star_gives_it(tmp_path):
    # a model file that gains an __all__ keeps its classes and imports, but a star import
    # of it no longer gives the ones the list leaves out (transformers 4.48's modeling_bert)
    modeling = b"import math\n\n\nclass Embeddings:\n    pass\n\n\nclass Model:\n    pass\n"
    listed = modeling + b'\n__all__ = ["Model"]\n'
    trees = {
        "1.0": {"toy/__init__.py": b"", "toy/modeling.py": modeling},
        "2.0": {"toy/__init__.py": b"", "toy/modeling.py": listed},
    }
    cases = {"toy": [Case("toy", label, "index") for label in trees]}

    def starred(name: str) -> Reference:
        return replace(ref(f"toy.modeling.{name}"), star="toy.modeling")

    refs = [starred("Embeddings"), starred("math.sqrt"), starred("Model"), ref("toy.modeling.math")]
    decided = resolve(refs, cases, workspace(tmp_path, trees))
    found = {(r.reference.target, r.reference.star): r for r in decided}
    gone = found["toy.modeling.Embeddings", "toy.modeling"]
    assert [gone.outcomes[v] for v in trees] == [Outcome.OK, Outcome.MISSING]
    assert gone.why["2.0"] == (
        "from toy.modeling import * does not bind 'Embeddings': its __all__ does not list it"
    )
    assert found["toy.modeling.math.sqrt", "toy.modeling"].outcomes["2.0"] is Outcome.MISSING
    assert set(found["toy.modeling.Model", "toy.modeling"].outcomes.values()) == {Outcome.OK}
    # read as the module's attribute (`import toy.modeling`), its globals are all there
    assert found["toy.modeling.math", None].outcomes["2.0"] is not Outcome.MISSING
    assert Resolved.from_json(gone.to_json()) == gone  # the JSON keeps which star import


def test_an_import_reads_the_module_an_attribute_of_the_same_name_hides(tmp_path):
    # transformers' __init__ serves the function convert_slow_tokenizer under the name of
    # its module: `from transformers.convert_slow_tokenizer import x` still imports the module
    init = b"from .conv import conv\n"
    trees = {
        "1.0": {
            "toy/__init__.py": init,
            "toy/conv.py": b"def conv():\n    pass\n\ndef x():\n    pass\n",
        },
        "2.0": {"toy/__init__.py": init, "toy/conv.py": b"def conv():\n    pass\n"},
    }
    cases = {"toy": [Case("toy", label, "index") for label in trees]}
    (found,) = resolve([ref("toy.conv.x", Kind.IMPORT)], cases, workspace(tmp_path, trees))
    assert [found.outcomes[v] for v in trees] == [Outcome.OK, Outcome.MISSING]


def test_a_patch_through_a_module_an_attribute_hides_is_undecided_not_missing(tmp_path):
    # siirl's vendored InternLM2 tokenizer: `from transformers.convert_slow_tokenizer import
    # SLOW_TO_FAST_CONVERTERS` then `SLOW_TO_FAST_CONVERTERS["InternLM2Tokenizer"] = ...`:
    # the module's dict, though `transformers.convert_slow_tokenizer` is a function
    init = b"from .conv import conv\n"
    trees = {
        "1.0": {"toy/__init__.py": init, "toy/conv.py": b"def conv():\n    pass\n\nTABLE = {}\n"},
        "2.0": {"toy/__init__.py": init, "toy/conv.py": b"def conv():\n    pass\n"},
    }
    cases = {"toy": [Case("toy", label, "index") for label in trees]}
    (found,) = resolve([ref("toy.conv.TABLE", Kind.PATCH)], cases, workspace(tmp_path, trees))
    assert [found.outcomes[v] for v in trees] == [Outcome.UNKNOWN, Outcome.MISSING]
    assert "which an attribute of its package hides" in found.why["1.0"]


def test_a_release_is_resolved_once_ever(tmp_path):
    refs = [ref("toy.trainer.Trainer.compute_loss", Kind.PATCH), ref("toy.Trainer")]
    first = resolve(refs, CASES, workspace(tmp_path, TREES), make_tree=FakeTree)
    assert FakeTree.lookups == [r.target for r in refs] * 3

    FakeTree.lookups = []
    warm = workspace(tmp_path, TREES)
    again = resolve(refs, CASES, warm, make_tree=FakeTree)
    assert FakeTree.lookups == []  # a later run: every outcome from the cache
    assert again == first
    assert warm.stats.files_from_cache == warm.stats.files_fetched == 0  # no file read


def test_cases_not_to_be_read_count_with_what_is_remembered_of_them(tmp_path):
    patch = ref("toy.trainer.Trainer.compute_loss", Kind.PATCH)
    train = ref("toy.trainer.Trainer.train")
    one, two = CASES["toy"][0], CASES["toy"][2]
    resolve([patch], {"toy": [one]}, workspace(tmp_path, TREES), make_tree=FakeTree)

    FakeTree.lookups = []
    ws = workspace(tmp_path, TREES)
    found = resolve([patch, train], CASES, ws, make_tree=FakeTree, decide_only={two})
    by_target = {r.reference.target: r.outcomes for r in found}
    # 1.0 was decided before for the patch: remembered; 1.1 never was: not checked there.
    assert by_target[patch.target] == {"1.0": Outcome.OK, "2.0": Outcome.MISSING}
    assert by_target[train.target] == {"2.0": Outcome.OK}
    assert FakeTree.lookups == [patch.target, train.target]  # looked up on 2.0 only
    unread = [ws._state(case).tree.source.requests for case in CASES["toy"][:2]]
    assert unread == [[], []]  # nothing was read of 1.0 or 1.1


def test_a_tree_that_can_change_is_decided_afresh_every_run(tmp_path):
    local = {"toy": [Case("toy", "1.0", "local")]}
    for _ in range(2):
        resolve([ref("toy.Trainer")], local, workspace(tmp_path, TREES), make_tree=FakeTree)
    assert FakeTree.lookups == ["toy.Trainer"] * 2


def test_a_cold_release_is_read_in_one_pass_not_file_by_file(tmp_path):
    anchored = [
        ref("toy.trainer.Trainer.compute_loss", Kind.ANCHOR, anchor="return 0"),
        ref("toy.trainer.nn.Linear", Kind.ANCHOR, anchor="x"),
    ]
    ws = workspace(tmp_path, TREES)
    resolve(anchored, CASES, ws, make_tree=FakeTree)
    sources = [ws._state(case).tree.source for case in CASES["toy"]]
    # The prefetch reads every file the targets' prefixes name, in one request each.
    assert [len(source.requests) for source in sources] == [1, 1, 1]
    assert "toy/trainer/nn/__init__.py" in sources[0].requests[0]


def test_a_reference_that_needs_only_a_bound_name_leaves_out_the_module_binding_it():
    """Its text may answer (canary.symbols.deftext): transformers.PreTrainedModel is
    all many projects ask of the 300 KB modeling_utils.py."""
    everything = candidate_paths("toy.modeling_utils.PreTrainedModel")
    bound = candidate_paths("toy.modeling_utils.PreTrainedModel", bound_only=True)
    assert everything - bound == {"toy/modeling_utils.py"}
    assert "toy/modeling_utils/__init__.py" in bound  # a package's __init__ is read


def test_results_of_other_code_are_not_reused(tmp_path):
    refs = [ref("toy.trainer.Trainer")]
    resolve(refs, CASES, workspace(tmp_path, TREES), make_tree=FakeTree)
    FakeTree.lookups = []
    memo = Memo(Cache(tmp_path / "cache"), salt="another resolver")
    resolve(refs, CASES, workspace(tmp_path, TREES), memo=memo, make_tree=FakeTree)
    assert len(FakeTree.lookups) == 3


def test_a_damaged_memo_blob_is_decided_again(tmp_path):
    refs = [ref("toy.trainer.Trainer")]
    resolve(refs, CASES, workspace(tmp_path, TREES), make_tree=FakeTree)
    for blob in (tmp_path / "cache" / "blobs" / "surface-resolution").rglob("*.entry"):
        header, _, _ = blob.read_bytes().partition(b"\n")
        blob.write_bytes(header + b"\n" + b"garbage")
    FakeTree.lookups = []
    (found,) = resolve(refs, CASES, workspace(tmp_path, TREES), make_tree=FakeTree)
    assert len(FakeTree.lookups) == 3
    assert set(found.outcomes.values()) == {Outcome.OK}


def test_a_release_that_cannot_be_read_is_an_error_not_an_outcome(tmp_path):
    errors = []
    (found,) = resolve(
        [ref("toy.trainer.Trainer")],
        CASES,
        workspace(tmp_path, TREES, failing={"1.1"}),
        make_tree=FakeTree,
        on_error=lambda case, exc: errors.append((case.label, str(exc))),
    )
    assert list(found.outcomes) == ["1.0", "2.0"]
    assert errors == [("1.1", "toy 1.1 from the test: connection reset")]
    with pytest.raises(FetchError):
        resolve(
            [ref("toy.trainer.Trainer")],
            CASES,
            workspace(tmp_path, TREES, failing={"1.1"}),
            make_tree=FakeTree,
        )


SOURCE = getsource_text("    def f(self):\n        return  x.replace('a', 'b')")


@pytest.mark.parametrize(
    ("anchor", "match", "outcome", "why"),
    [
        ("return  x", Match.EXACT, "ok", ""),
        ("return x", Match.EXACT, "missing", "found only after collapsing whitespace"),
        ("def f(self):\n    return", Match.EXACT, "missing", "only in textwrap.dedent(source)"),
        ("def f(self):\n    return", Match.DEDENTED, "ok", ""),
        ("def f(self):\n    pass", Match.EXACT, "missing", "its first line ('def f(self):')"),
        ("'b')\n", Match.EXACT, "ok", ""),  # inspect keeps the last line's newline
        (r"^\s+return", Match.REGEX, "unknown", "only with re.MULTILINE"),
        (r"^def f", Match.REGEX_DEDENTED, "ok", ""),
        (r"return\s+y", Match.REGEX, "missing", "matches nowhere"),
        (r"return (", Match.REGEX, "unknown", "does not compile"),
    ],
)
def test_anchor_matching(anchor, match, outcome, why):
    found, reason = anchor_outcome(SOURCE, anchor, match)
    assert found.value == outcome
    assert why in reason
    assert bool(reason) == bool(why)


@pytest.mark.parametrize(
    ("anchor", "match", "names"),
    [
        ("return  y", Match.EXACT, "'y'"),  # its one name is nowhere: no spelling is there
        ("return x", Match.EXACT, ""),  # every name is there: maybe only reformatted
        ("return x.clip(y)", Match.EXACT, ""),  # one name still there: maybe only edited
        (r"[\"']?zeta[\"']?\s*=\s*True", Match.REGEX, "'zeta'"),  # optional quotes aside
        (r"(?P<i>\s*)(zeta)\.omega\(self", Match.REGEX, "'zeta', 'omega'"),  # a group's too
        (r"(?:zeta)?return\s+replace", Match.REGEX, ""),  # an optional name proves nothing
        (r"(zeta|omega)\s+replace", Match.REGEX, ""),  # nor one of alternatives
        (r"(?i)ZETA", Match.REGEX, ""),  # nor a case-insensitive one
        (r"\s+return\s+\(", Match.REGEX, ""),  # nor a text without names
    ],
)
def test_a_miss_says_where_no_spelling_of_the_text_is_left(anchor, match, names):
    found, reason = anchor_outcome(SOURCE, anchor, match)
    assert found is Outcome.MISSING
    assert (TEXT_GONE in reason) == bool(names)
    assert reason.endswith(f"(none of its names is in it: {names})") == bool(names)


# -- findings: what is held against a project ---------------------------------------------


def resolved(target: str, outcomes: dict[str, str], why: dict[str, str] | None = None):
    return Resolved(ref(target), {v: Outcome(o) for v, o in outcomes.items()}, why or {})


SPREAD = {"1.0": "missing", "1.1": "missing", "2.0": "missing", "2.1": "unknown"}


def test_a_miss_counts_only_inside_the_declared_range():
    project = Target("proj", "0.1", {"toy": ">=1.1,<2.1"})
    (finding,) = findings([resolved("toy.a", SPREAD, {"2.0": "gone"})], project)
    assert finding.missing == {"1.1": "", "2.0": "gone"}  # 1.0 is outside, 2.1 unknown
    assert finding.new == ("1.1", "2.0")
    assert finding.fails
    assert findings([resolved("toy.a", {"1.0": "ok", "2.1": "unknown"})], project) == ()


def test_an_undeclared_package_constrains_nothing():
    (finding,) = findings([resolved("toy.a", SPREAD)], Target("proj", None, {}))
    assert finding.new == ("1.0", "1.1", "2.0")


def test_a_pre_release_counts_as_inside_a_range_that_reaches_it():
    assert in_range("2.0.0rc1", SpecifierSet(">=2.0"))  # a pre-release of X counts as X
    assert not in_range("2.0.0.dev0", SpecifierSet("<2.0"))
    assert in_range("main", SpecifierSet(">=1.0,!=1.5"))  # newer than every release
    assert not in_range("main", SpecifierSet(">=1.0,<=2.0"))


def test_accepted_misses_do_not_fail():
    def expected_absent(reference: Reference, version: str) -> str | None:
        return "removed on purpose in 2.0" if version.startswith("2.") else None

    (finding,) = findings(
        [resolved("toy.a", SPREAD)], Target("proj", None), accepts=[expected_absent]
    )
    assert finding.accepted == {"2.0": "removed on purpose in 2.0"}
    assert finding.new == ("1.0", "1.1")
    (finding,) = findings(
        [resolved("toy.a", {"2.0": "missing"})], Target("proj", None), accepts=[expected_absent]
    )
    assert not finding.fails


def test_a_requirement_that_is_no_specifier_is_a_config_error():
    with pytest.raises(ConfigError, match=r"proj declares toy'=>1'.*PEP 440"):
        findings([resolved("toy.a", SPREAD)], Target("proj", None, {"toy": "=>1"}))


# -- baseline: only new findings fail -----------------------------------------------------


def baseline_of(tmp_path, found, packages=None) -> Path:
    path = tmp_path / "surface-baseline.json"
    write_baseline(path, packages or {"toy": ["1.0", "1.1", "2.0"]}, found)
    return path


def test_a_baseline_accepts_exactly_what_was_missing_when_it_was_written(tmp_path):
    project = Target("proj", None)
    before = findings(
        [resolved("toy.a", {"1.0": "ok", "1.1": "missing", "2.0": "missing"})], project
    )
    baseline = load_baseline(baseline_of(tmp_path, before))
    accepts = [baseline.accepts("proj")]

    # 1.0 was fine then and is missing now: new. A release the baseline never saw (2.5)
    # stands as the nearest older one it saw (2.0: missing), 0.9 as the oldest (1.0: ok).
    now = {"0.9": "missing", "1.0": "missing", "1.1": "missing", "2.0": "missing", "2.5": "missing"}
    (finding,) = findings([resolved("toy.a", now)], project, accepts=accepts)
    assert finding.new == ("0.9", "1.0")
    assert finding.accepted["2.5"].startswith(f"in the baseline {tmp_path}")
    assert "missing on 2.0 when it was written" in finding.accepted["2.5"]

    # Another project's finding, or another reference, is not accepted by it.
    (other,) = findings(
        [resolved("toy.a", now)], Target("other", None), accepts=[baseline.accepts("other")]
    )
    assert other.new == tuple(now)
    (another,) = findings([resolved("toy.b", now)], project, accepts=accepts)
    assert another.new == tuple(now)


def test_a_baseline_names_what_no_finding_matches_any_more(tmp_path):
    project = Target("proj", None)
    old = findings(
        [resolved("toy.a", {"1.0": "missing"}), resolved("toy.b", {"1.0": "missing"})], project
    )
    baseline = load_baseline(baseline_of(tmp_path, old))
    now = findings(
        [resolved("toy.a", {"1.0": "missing"})], project, accepts=[baseline.accepts("proj")]
    )
    assert baseline.stale(now) == [("proj", ref("toy.b").key)]


def test_the_baseline_file_is_sorted_json_that_reviews_as_a_diff(tmp_path):
    project = Target("proj", None)
    found = findings(
        [resolved("toy.b", {"1.0": "missing"}), resolved("toy.a", {"1.0": "missing"})], project
    )
    data = json.loads(baseline_of(tmp_path, found).read_text())
    assert data["canary_surface_baseline"] == 1
    assert [entry["target"] for entry in data["findings"]] == ["toy.a", "toy.b"]
    assert data["findings"][0] == {
        "project": "proj", "package": "toy", "target": "toy.a", "kind": "attribute",
        "anchor": None, "missing": ["1.0"],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, r"no such file; write it with --baseline .* --update-baseline"),
        ("{not json", "not readable as JSON"),
        ('{"findings": []}', "not a canary surface baseline"),
        ('{"canary_surface_baseline": 1, "packages": {}, "findings": [{}]}', "lacks 'project'"),
    ],
)
def test_a_baseline_that_cannot_be_read_says_how_to_write_one(tmp_path, content, message):
    path = tmp_path / "baseline.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        load_baseline(path)


def test_the_real_package_tree_resolves_through_the_workspace(tmp_path):
    refs = [
        ref("toy.trainer.Trainer.compute_loss", Kind.PATCH),
        ref("toy.Trainer.train"),  # re-exported by toy/__init__.py
        ref("toy.trainer.nn.LayerNorm"),  # leaves the package at nn: never missing
        ref("toy.trainer.Trainer.compute_loss", Kind.ANCHOR, DIVISION, Match.EXACT),
    ]
    found = resolve(refs, CASES, workspace(tmp_path, TREES))
    outcomes = [[r.outcomes[v].value for v in ("1.0", "2.0")] for r in found]
    assert outcomes == [["ok", "missing"], ["ok", "ok"], ["unknown", "unknown"], ["ok", "missing"]]
    assert "_compute_loss" in found[0].why["2.0"]


def test_the_all_read_off_each_file_text_is_kept_per_release(tmp_path):
    cache = Cache(tmp_path / "cache")
    read = {"t/models/a.py": ("AModel",), "t/models/b.py": None, "t/models/c.py": ()}
    first = TextsMemo(cache, salt="reader 1")
    first.remember("index:t:1.0", read)
    first.remember(None, read)  # a tree that can change: never kept
    first.save()
    again = TextsMemo(cache, salt="reader 1")
    paths = [*read, "t/models/unread.py"]
    assert again.recall("index:t:1.0", paths) == read  # what was not read is left out
    assert again.recall("index:t:1.1", paths) == {}
    assert again.recall(None, paths) == {}
    # Another reader's readings are never reused.
    assert TextsMemo(cache, salt="reader 2").recall("index:t:1.0", paths) == {}


def test_a_file_read_on_one_release_serves_the_same_file_on_another(tmp_path):
    memo = TextsMemo(Cache(tmp_path / "cache"), salt="reader")
    memo.remember(
        "index:t:1.0",
        {"t/models/a.py": ("AModel",), "t/models/b.py": None},
        {"t/models/a.py": "0badf00d:120", "t/models/b.py": "12345678:40"},
    )
    same = memo.recall_same(
        "index:t:1.1",
        {"t/models/a.py": "0badf00d:120", "t/models/b.py": "87654321:40", "t/c.py": "1:1"},
    )
    # Same path and fingerprint: the same file. Another fingerprint is another file.
    assert same == {"t/models/a.py": ("AModel",)}
    assert memo.recall("index:t:1.1", ["t/models/a.py", "t/models/b.py"]) == same
    # The same fingerprint at another path is not taken for the same file.
    assert memo.recall_same("index:t:1.2", {"t/models/z.py": "0badf00d:120"}) == {}


def test_a_damaged_texts_blob_is_read_again(tmp_path):
    cache = Cache(tmp_path / "cache")
    memo = TextsMemo(cache, salt="reader")
    memo.remember("index:t:1.0", {"t/a.py": ("A",)})
    memo.save()
    (blob,) = (tmp_path / "cache" / "blobs" / "surface-folder-all").rglob("*.entry")
    # Whole as an entry, but not what a TextsMemo writes (another canary, a hand edit).
    cache.write_blob("surface-folder-all", blob.stem, b'{"t/a.py": 3}')
    assert TextsMemo(cache, salt="reader").recall("index:t:1.0", ["t/a.py"]) == {}


def test_texts_of_a_release_held_on_disk_are_read_there_not_kept_as_entries(tmp_path):
    class Kept(Source):
        available_offline = True  # as an index source whose wheel is kept

    ws = Workspace(
        lambda case: Kept(case, TREES, set()),
        Cache(tmp_path / "cache"),
        FetchPolicy(),
        parse_processes=0,
    )
    release = CASES["toy"][0]
    read = ws.read(release, ["toy/trainer.py", "toy/gone.py"], keep=False)
    assert read == {"toy/trainer.py": TRAINER_V1, "toy/gone.py": None}
    assert not (tmp_path / "cache" / "files").exists()
    # Read to be kept (the default), the same file becomes an entry.
    ws.read(release, ["toy/trainer.py"])
    assert len(list((tmp_path / "cache" / "files").rglob("*.entry"))) == 1


def test_more_files_of_a_release_under_way_are_loaded_after_it_each_read_once(tmp_path):
    ws = workspace(tmp_path, TREES, failing={"1.1"})
    release, failing = CASES["toy"][0], CASES["toy"][1]
    # Every download starts at once; what the newest release's lookups read is named
    # for the others later, while theirs may still be under way.
    ws.prefetch({release: {"toy/__init__.py"}, failing: {"toy/__init__.py"}})
    ws.prefetch({release: {"toy/__init__.py", "toy/trainer.py"}, failing: {"toy/trainer.py"}})
    found = ws.snapshot(release, ["toy/__init__.py", "toy/trainer.py"])
    assert found.modules["toy/trainer.py"] is not None
    source = ws._state(release).tree.source
    assert source.requests == [("toy/__init__.py",), ("toy/trainer.py",)]
    # A release whose first load failed fails the same way, its later files not tried.
    with pytest.raises(FetchError, match="connection reset"):
        ws.snapshot(failing, ["toy/trainer.py"])
    assert ws._state(failing).tree.source.requests == [("toy/__init__.py",)]


def test_definitions_are_read_off_a_text_only_where_no_code_index_is_at_hand(tmp_path):
    ws = workspace(tmp_path, TREES)
    release = CASES["toy"][0]
    files = _CaseFiles(ws, release)
    assert files.definitions_text("toy/trainer.py") == TRAINER_V1.decode()
    ws.snapshot(release, ["toy/trainer.py"])  # parsed for another lookup
    assert files.definitions_text("toy/trainer.py") is None  # the index answers, read once
