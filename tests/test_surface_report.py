"""The surface report: outcomes folded into version ranges, hard breaks (pinned releases
first), then silent ones with the anchored function's upstream diff, then the rest."""

from __future__ import annotations

import json

import pytest
from packaging.specifiers import SpecifierSet

from canary import codeindex
from canary.errors import ConfigError, Subject
from canary.surface import report
from canary.surface.findings import findings as surface_findings
from canary.surface.model import (
    NOT_READ,
    Kind,
    Match,
    Outcome,
    ReadFrom,
    Reference,
    Resolved,
    Site,
    SurfaceResult,
    Target,
)

OK, MISSING, UNKNOWN = Outcome.OK, Outcome.MISSING, Outcome.UNKNOWN
TOY = ("0.9.0", "1.0.0", "1.1.0", "2.0.0", "3.0.0")

ENGINE_OLD = b"class Engine:\n    def run(self, x):\n        y = x * 2\n        return y\n"
ENGINE_NEW = b"class Engine:\n    def run(self, x):\n        return x * 2\n"


def ref(target: str, kind: Kind = Kind.IMPORT, *, guarded: bool = False, **extra) -> Reference:
    package = target.split(".", maxsplit=1)[0]
    return Reference(package, target, kind, (Site("proj/patch.py", 10, guarded),), **extra)


def resolved(reference: Reference, *outcomes: Outcome, versions=TOY, why=None) -> Resolved:
    return Resolved(reference, dict(zip(versions, outcomes, strict=True)), why or {})


ENGINE = ref("toy.core.Engine")
# another class than ENGINE: a miss inside a missing owner is the owner's (findings.py)
RUN_PATCH = ref("toy.core.Runner.run", Kind.PATCH, guarded=True)
ANCHOR = ref("toy.core.Runner.run", Kind.ANCHOR, anchor="y = x * 2", match=Match.EXACT)
OLD_HELPER = ref("toy.util._helper", Kind.ATTRIBUTE)
DYNAMIC = ref("toy.lazy.thing", Kind.ATTRIBUTE)
FINE = ref("toy.core")
PINNED = ref("pin.api.load")


def result(*references: Resolved) -> SurfaceResult:
    target = Target("proj", "1.0", {"toy": ">=1.0,<3", "pin": "==2.0.0"})
    packages = {"toy": TOY, "pin": ("1.0.0", "2.0.0")}
    return SurfaceResult((target,), packages, references)


EVERYTHING = result(
    resolved(ENGINE, OK, OK, MISSING, MISSING, MISSING, why={"1.1.0": "toy.core has no Engine"}),
    resolved(RUN_PATCH, OK, OK, OK, MISSING, MISSING),
    resolved(ANCHOR, OK, OK, OK, MISSING, MISSING),
    resolved(OLD_HELPER, MISSING, OK, OK, OK, MISSING),
    resolved(DYNAMIC, OK, UNKNOWN, UNKNOWN, OK, OK),
    resolved(FINE, OK, OK, OK, OK, OK),
    resolved(PINNED, OK, MISSING, versions=("1.0.0", "2.0.0")),
)


class FakeSources:
    """The anchored function lives in toy/core.py: Engine.run; 2.0.0 rewrote it."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def locate(self, reference: Reference, version: str) -> Subject | None:
        return Subject("toy/core.py", "Engine.run")

    def module(self, package: str, version: str, path: str) -> codeindex.Module | None:
        self.asked.append((version, path))
        content = ENGINE_OLD if version < "2" else ENGINE_NEW
        return codeindex.parse_module(content, path=path)


def test_hard_breaks_come_first_with_the_pinned_release_first_then_silent_then_the_rest():
    built = report.build(EVERYTHING)
    order = [(e.section, e.reference.target, e.reference.kind) for e in built.entries]
    assert order == [
        ("hard", "pin.api.load", Kind.IMPORT),  # the project pins pin==2.0.0 itself
        ("hard", "toy.core.Engine", Kind.IMPORT),
        ("silent", "toy.core.Runner.run", Kind.PATCH),  # guarded: skipped, not a crash
        ("silent", "toy.core.Runner.run", Kind.ANCHOR),
        ("rest", "toy.util._helper", Kind.ATTRIBUTE),  # missing outside >=1.0,<3 only
        ("rest", "toy.lazy.thing", Kind.ATTRIBUTE),  # unknown is never missing
    ]
    assert built.fine == 1
    first = built.entries[0]
    assert first.pinned == ("2.0.0",)
    # Held against the target only inside its range: 3.0.0 is outside <3.
    assert built.entries[1].held == ("1.1.0", "2.0.0")
    assert built.entries[4].held == ()


def test_outcomes_fold_into_version_ranges_in_the_order_checked():
    built = report.build(EVERYTHING, everything=True)
    engine = next(e for e in built.entries if e.reference == ENGINE)
    assert report.spans_text(engine) == "0.9.0\u20131.0.0: ok (2), 1.1.0\u20133.0.0: MISSING (3)"
    # By default a finding's history inside the declared range (>=1.0,<3) only.
    built = report.build(EVERYTHING)
    engine = next(e for e in built.entries if e.reference == ENGINE)
    assert report.spans_text(engine) == "1.0.0: ok, 1.1.0\u20132.0.0: MISSING (2)"
    assert report.why(engine) == "toy.core has no Engine"
    terminal = report.render(EVERYTHING, "terminal", everything=True)
    assert "toy toy.core.Engine (import)" in terminal
    assert "  used at proj/patch.py:10" in terminal
    assert "  upstream: toy.core has no Engine" in terminal
    assert (
        terminal.index("Breaks inside")
        < terminal.index("Silently stops applying")
        < terminal.index("Misses outside")
    )
    # the header counts what the verdict counts: the references held against the target
    header = terminal.splitlines()[0]
    assert "4 counted: 2 break(s), 2 silently stop(s) applying, 0 came later" in header
    assert "2 not counted" in header
    # by default only the findings: what is not counted is behind --all
    default = report.render(EVERYTHING, "terminal")
    assert "Misses outside" not in default
    assert "(--all shows them)" in default.splitlines()[0]
    markdown = report.render(EVERYTHING, "markdown", everything=True)
    assert (
        "| toy | `toy.core.Engine (import)` | proj/patch.py:10 | 0.9.0\u20131.0.0: ok (2), "
        "1.1.0\u20133.0.0: MISSING (3) | toy.core has no Engine |"
    ) in markdown


def test_an_anchor_that_stops_applying_shows_the_diff_of_its_function_between_the_releases():
    sources = FakeSources()
    built = report.build(EVERYTHING, sources=sources)
    anchor = next(e for e in built.entries if e.reference == ANCHOR)
    (diff,) = anchor.diffs
    assert (diff.good, diff.bad) == ("1.1.0", "2.0.0")  # last applied, first not
    assert "-        y = x * 2" in diff.upstream.diff
    assert "+        return x * 2" in diff.upstream.diff
    assert "Engine.run changed between 1.1.0 and 2.0.0" in diff.upstream.note
    assert sources.asked == [("1.1.0", "toy/core.py"), ("2.0.0", "toy/core.py")]
    # Only anchors are diffed: a patch target's miss says what is there instead.
    assert all(not e.diffs for e in built.entries if e.reference != ANCHOR)
    markdown = report.render(EVERYTHING, "markdown", sources=FakeSources())
    assert "```diff\n--- toy/core.py:2 Engine.run @ 1.1.0" in markdown
    assert "-        y = x * 2" in markdown


def test_a_release_where_a_registry_reads_another_source_is_not_read_and_never_diffed():
    moved = ref("toy.core.Engine.run", Kind.ANCHOR, anchor="y = x * 2", match=Match.EXACT,
                read_from=ReadFrom(("toy.old.Engine", "toy.core.Engine")))  # fmt: skip
    unread = dict.fromkeys(TOY[:2], f"{NOT_READ}: toy.old.Engine is read instead")
    outcomes = resolved(moved, OK, OK, MISSING, OK, OK, why=unread)
    sources = FakeSources()
    (entry,) = report.build(result(outcomes), sources=sources, everything=True).entries
    assert report.spans_text(entry) == (
        "0.9.0\u20131.0.0: not read (2), 1.1.0: MISSING, 2.0.0\u20133.0.0: ok (2)"
    )
    assert entry.since == "2.0.0"  # came later: 1.0.0 was ok only as not read
    assert entry.diffs == ()  # nothing it applied to before 1.1.0
    assert sources.asked == []


def test_an_anchored_function_that_is_gone_says_so():
    class Gone(FakeSources):
        def module(self, package, version, path):
            content = ENGINE_OLD if version < "2" else b"class Engine:\n    pass\n"
            return codeindex.parse_module(content, path=path)

    built = report.build(EVERYTHING, sources=Gone())
    (diff,) = next(e for e in built.entries if e.reference == ANCHOR).diffs
    assert diff.upstream.note == "Engine.run is gone from toy/core.py in 2.0.0"


def test_findings_given_by_the_resolver_decide_what_is_held_against_the_target():
    # The configuration accepted the Engine import's miss: it is no longer a break.
    def accepted(reference: Reference, version: str) -> str | None:
        return "gone on purpose" if reference == ENGINE else None

    (target,) = EVERYTHING.targets
    findings = surface_findings(EVERYTHING.references, target, accepts=[accepted])
    built = report.build(EVERYTHING, findings=findings)
    engine = next(e for e in built.entries if e.reference == ENGINE)
    assert (engine.section, engine.held) == ("rest", ())


def test_github_annotates_each_break_at_its_first_site_and_nothing_else():
    lines = report.render(EVERYTHING, "github").splitlines()
    errors = [line for line in lines if line.startswith("::error")]
    assert len(errors) == 4  # two hard, two silent; misses outside the range are not
    assert errors[1].startswith("::error file=proj/patch.py,line=10,title=canary surface")
    assert "toy 1.1.0\u20132.0.0 breaks" in errors[1]
    assert "silently does nothing" in errors[2]
    assert lines[-1].startswith("canary surface of proj 1.0: 7 references")


def test_json_is_the_contract_itself():
    assert json.loads(report.render(EVERYTHING, "json")) == EVERYTHING.to_json()


def test_the_fields_json_writes_only_where_set_read_back_as_they_were():
    target = Target("proj", "1.0", {"toy": ">=1"}, extras={"rl": {"toy": ">=2"}})
    assert Target.from_json(target.to_json()) == target
    assert "extras" not in Target("proj", "1.0", {}).to_json()
    registered = Site("proj/load.py", 3, registered=("transformers.models.qwen3_5_moe",))
    assert Site.from_json(registered.to_json()) == registered
    assert "registered" not in Site("proj/load.py", 3).to_json()


def test_a_guarded_import_that_fails_is_said_to_fall_back_not_to_patch_nothing():
    guarded = ref("toy.core.Engine", guarded=True)
    lines = report.render(result(resolved(guarded, OK, OK, MISSING, MISSING, MISSING)), "github")
    (error,) = [line for line in lines.splitlines() if line.startswith("::error")]
    assert "toy 1.1.0\u20132.0.0 fails into its fallback (guarded)" in error


def test_main_is_inside_a_range_without_an_upper_bound_only():
    open_ended, bounded = [SpecifierSet(">=1.0")], [SpecifierSet(">=1.0,<3")]
    assert report.inside(open_ended, "main")
    assert not report.inside(bounded, "main")
    # A target that declares nothing on a package is not constrained by it.
    (undeclared,) = report.declared_range([Target("proj", "1.0", {})], "toy")
    assert report.inside([undeclared], "1.0.0")
    assert report.inside([undeclared], "main")


def test_a_requirement_that_is_not_a_specifier_names_the_target_and_the_fix():
    bad = SurfaceResult((Target("proj", "1.0", {"toy": "latest"}),), {"toy": TOY}, ())
    with pytest.raises(ConfigError, match=r"proj: its requirement on toy \('latest'\)"):
        report.build(bad)


def test_an_anchor_in_a_whole_modules_source_diffs_the_function_that_held_the_text():
    class WholeModule(FakeSources):
        def locate(self, reference, version):
            return Subject("toy/core.py", None)  # getsource(toy.core): the module

    # Located whitespace aside (a method's first line has no indentation in its source).
    module_anchor = ref("toy.core", Kind.ANCHOR, anchor="y = x *  2", match=Match.EXACT)
    result = SurfaceResult(
        EVERYTHING.targets,
        EVERYTHING.packages,
        (resolved(module_anchor, OK, OK, OK, MISSING, MISSING),),
    )
    (entry,) = report.build(result, sources=WholeModule()).entries
    (diff,) = entry.diffs
    assert diff.upstream.subject == Subject("toy/core.py", "Engine.run")
    assert "-        y = x * 2" in diff.upstream.diff


def test_a_pattern_anchor_is_looked_for_as_a_pattern():
    pattern = ref("toy.core", Kind.ANCHOR, anchor=r"y = x \* \d", match=Match.REGEX)
    module = codeindex.parse_module(ENGINE_OLD, path="toy/core.py")
    assert report.holding(module, pattern) == "Engine.run"
    broken = ref("toy.core", Kind.ANCHOR, anchor="(", match=Match.REGEX)
    assert report.holding(module, broken) is None


def test_a_miss_where_no_site_runs_is_no_break_and_one_that_came_later_is_its_own_section():
    gated = Reference(
        "toy",
        "toy.core.OldEngine",
        Kind.PATCH,
        (Site("proj/patch.py", 12, False, (("toy", "<2.0"),)),),
    )
    later = ref("toy.core.NewEngine")
    built = report.build(
        result(
            resolved(gated, OK, OK, OK, MISSING, MISSING),  # missing where it never runs
            resolved(later, MISSING, MISSING, OK, OK, OK),  # 1.0.0 is inside, 1.1.0 has it
        )
    )
    entries = {entry.reference.target: entry for entry in built.entries}
    old = entries["toy.core.OldEngine"]
    assert (old.section, old.held) == (report.REST, ())
    new = entries["toy.core.NewEngine"]
    assert (new.section, new.held, new.since) == (report.LATER, ("1.0.0",), "1.1.0")
    assert report.later_text(new) == "needs toy>=1.1.0; counts on 1.0.0: fails the run"
    markdown = report.markdown(built)
    assert "### Came later than the declared floor" in markdown
    assert "needs toy>=1.1.0" in markdown
    (error,) = [line for line in report.github(built).splitlines() if line.startswith("::error")]
    assert "toy 1.0.0 breaks (needs toy>=1.1.0)" in error


def binding(target: str) -> Reference:
    """``target = mine`` at one unguarded site: it binds the name."""
    return Reference("toy", target, Kind.PATCH, (Site("proj/patch.py", 10, replaces=True),))


def test_an_assignment_silently_stops_applying_unless_what_it_assigns_on_is_gone():
    unguarded = binding("toy.core.Engine.step")
    stops = result(
        resolved(unguarded, OK, OK, MISSING, MISSING, MISSING),
        resolved(ref("toy.core.Engine"), OK, OK, OK, OK, OK),
    )
    (entry,) = [e for e in report.build(stops).entries if e.reference == unguarded]
    assert entry.section == report.SILENT  # Engine.step = mine: no error, no effect
    # Engine itself gone from 1.1.0: the assignment raises there, as Engine's own miss (a
    # break, held once: the assignment's is that one)
    breaks = result(
        resolved(unguarded, OK, OK, MISSING, MISSING, MISSING),
        resolved(ref("toy.core.Engine"), OK, OK, MISSING, MISSING, MISSING),
    )
    sections = {e.reference.target: (e.section, e.held) for e in report.build(breaks).entries}
    assert sections["toy.core.Engine"] == (report.HARD, ("1.1.0", "2.0.0"))
    assert sections["toy.core.Engine.step"][1] == ()
    # Engine.step[k] = v (or += v) reads Engine.step first: it raises where that is gone
    item = ref("toy.core.Engine.step", Kind.PATCH)
    reads = result(
        resolved(item, OK, OK, MISSING, MISSING, MISSING),
        resolved(ref("toy.core.Engine"), OK, OK, OK, OK, OK),
    )
    (entry,) = [e for e in report.build(reads).entries if e.reference == item]
    assert entry.section == report.HARD


def test_an_assignment_that_came_later_does_nothing_there_it_does_not_break():
    # ms-swift: modeling_utils.ALL_ATTENTION_FUNCTIONS = ... on releases before it existed
    later = binding("toy.core.NEW_TABLE")
    built = report.build(result(resolved(later, MISSING, MISSING, OK, OK, OK)))
    (entry,) = built.entries
    assert (entry.section, entry.silently) == (report.LATER, True)
    (error,) = [line for line in report.github(built).splitlines() if line.startswith("::error")]
    assert "toy 1.0.0 silently does nothing (needs toy>=1.1.0)" in error


def test_a_reference_to_a_package_no_release_of_which_was_checked_is_not_fine():
    # --tags toy=9.9.9: nothing was resolved, so nothing is "fine everywhere"
    nothing = SurfaceResult(
        (Target("proj", "1.0", {"toy": ">=1.0"}),), {"toy": ()}, (resolved(FINE, versions=()),)
    )
    built = report.build(nothing)
    assert (built.fine, built.unchecked) == (0, 1)
    line = report.summary(built)
    assert "0 fine everywhere; 1 on no release checked" in line
    assert report.summary(report.build(EVERYTHING)).endswith("fine everywhere")


def test_a_name_the_project_adds_itself_is_not_counted_and_says_why():
    # auto-round: modeling_utils.no_init_weights = initialization.no_init_weights, >=1.1
    window = (("toy", ">=1.1.0"),)
    site = Site("proj/patch.py", 10, versions=window, replaces=True, aliases="toy.init.no_init")
    alias = Reference("toy", "toy.core.no_init", Kind.PATCH, (site,))
    shim = result(
        resolved(alias, OK, OK, MISSING, MISSING, MISSING),
        resolved(ref("toy.core.Engine"), OK, OK, OK, OK, OK),
    )
    built = report.build(shim, everything=True)
    (entry,) = [e for e in built.entries if e.reference == alias]
    assert (entry.section, entry.held) == (report.REST, ())
    assert "not counted: a compat re-export" in report.terminal(built)
    assert "not counted: a compat re-export" in report.markdown(built)


def test_a_line_used_under_two_conditions_is_shown_once():
    # a module-level site copied once per importer of its module
    twice = (Site("proj/patch.py", 9), Site("proj/patch.py", 9, undecided="named in a string"))
    reference = Reference("transformers", "transformers.X", Kind.IMPORT, twice)
    assert report.sites(reference) == "proj/patch.py:9"


def test_an_anchor_the_project_raises_without_breaks_one_it_rewrites_by_stops_applying():
    # torchao: if "per_tensor_scale" not in source: raise RuntimeError(...)
    check = Reference(
        "toy", "toy.core.Engine.run", Kind.ANCHOR, (Site("proj/check.py", 3, raises=True),),
        anchor="y = x * 2", match=Match.EXACT,
    )  # fmt: skip
    built = report.build(result(resolved(check, OK, OK, OK, MISSING, MISSING)))
    (entry,) = [e for e in built.entries if e.reference == check]
    assert (entry.section, entry.silently) == (report.HARD, False)
    (entry,) = report.build(result(resolved(ANCHOR, OK, OK, OK, MISSING, MISSING))).entries
    assert (entry.section, entry.silently) == (report.SILENT, True)


def test_a_guarded_import_is_a_break_where_its_guard_raises_the_error_again():
    def imported(*, raises: bool) -> Reference:
        site = Site("proj/align.py", 32, guarded=True, raises=raises)
        return Reference("trl", "trl.ORPOTrainer", Kind.IMPORT, (site,))

    assert report.silent(imported(raises=False))  # it fails into its fallback
    assert not report.silent(imported(raises=True))
    assert report.sites(imported(raises=True)) == (
        "proj/align.py:32 (guarded, its ImportError raised again)"
    )
