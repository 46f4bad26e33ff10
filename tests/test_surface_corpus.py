"""bench/surface_corpus.py's judging, on a small fake corpus: how a triage table's verdicts
apply to findings, what counts as untriaged or a miss, and the exit status (offline)."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from canary.surface.findings import Finding
from canary.surface.model import Kind, Reference, Site

_PATH = Path(__file__).resolve().parents[1] / "bench" / "surface_corpus.py"
_SPEC = importlib.util.spec_from_file_location("surface_corpus", _PATH)
assert _SPEC is not None
assert _SPEC.loader is not None
corpus = importlib.util.module_from_spec(_SPEC)
sys.modules["surface_corpus"] = corpus
_SPEC.loader.exec_module(corpus)

TARGET = "transformers.models.llama.modeling_llama.LlamaFlashAttention2"


def seen(
    *paths: str,
    releases: tuple[str, ...] = ("4.48.0", "5.0.0"),
    confidence: str = "proven",
    target: str = TARGET,
) -> corpus.Seen:
    sites = tuple((path, 10) for path in paths)
    return corpus.Seen(
        "transformers", target, "import", None, sites, releases, corpus.Confidence(confidence)
    )


def entry(path: str, verdict: str, releases: str = "", **extra: str) -> corpus.Entry:
    cls = corpus.FalseClass(extra.pop("cls")) if "cls" in extra else None
    return corpus.Entry(
        package="transformers",
        target=TARGET,
        kind="import",
        path=path,
        verdict=corpus.Verdict(verdict),
        upstream="modeling_llama.py: gone in 4.48.0",
        site=f"{path}:10",
        releases=releases,
        false_class=cls,
        why=extra.get("why", ""),
    )


def test_one_true_site_makes_the_finding_true() -> None:
    entries = [entry("a.py", "false", cls="presence-test"), entry("b.py", "true")]
    assert corpus.judge(seen("a.py", "b.py"), entries).verdict is corpus.Verdict.TRUE


def test_false_needs_every_site_and_release_judged() -> None:
    only_a = [entry("a.py", "false", cls="fallback-import")]
    assert corpus.judge(seen("a.py", "b.py"), only_a).verdict is None
    assert corpus.judge(seen("a.py"), only_a).verdict is corpus.Verdict.FALSE
    old_only = [entry("a.py", "false", "<5", cls="version-helper")]
    assert corpus.judge(seen("a.py"), old_only).verdict is None  # 5.0.0 nobody judged
    split = [*old_only, entry("a.py", "debatable", ">=5", why="depends on the config")]
    assert corpus.judge(seen("a.py"), split).verdict is corpus.Verdict.DEBATABLE


def test_the_key_is_package_target_kind_anchor_not_the_line() -> None:
    other = seen("a.py", target=TARGET + "X")
    assert corpus.judge(other, [entry("a.py", "true")]).verdict is None
    moved = corpus.Seen(
        "transformers",
        TARGET,
        "import",
        None,
        (("a.py", 999),),
        ("5.0.0",),
        corpus.Confidence.PROVEN,
    )
    assert corpus.judge(moved, [entry("a.py", "true")]).verdict is corpus.Verdict.TRUE


def test_main_is_newer_than_every_release() -> None:
    assert entry("a.py", "true", ">=5").covers("main")
    assert not entry("a.py", "true", "<5").covers("main")


def test_tally_counts_misses_and_untriaged() -> None:
    entries = [entry("a.py", "true"), entry("b.py", "false", cls="absent-model")]
    judged = [
        corpus.judge(seen("a.py"), entries),
        corpus.judge(seen("b.py"), entries),
        corpus.judge(seen("c.py"), entries),
        corpus.judge(seen("a.py", confidence="possible"), entries),
    ]
    figures = corpus.tally(judged)
    assert (figures.counted, figures.true, figures.false, figures.untriaged) == (3, 1, 1, 1)
    assert (figures.possible, figures.possible_true) == (1, 1)
    assert figures.precision == 0.5  # judged: one true, one false
    assert figures.recall == 0.5  # one true counted, one true left possible


def test_a_true_reference_no_longer_reported_is_lost() -> None:
    entries = [entry("a.py", "true"), entry("b.py", "false", cls="presence-test")]
    assert corpus.lost_references(entries, [seen("a.py", confidence="possible")]) == []
    assert corpus.lost_references(entries, []) == [("transformers", TARGET, "import", None)]
    project = corpus.Project("p", "1.0")
    report = corpus.evaluate(project, [], corpus.Tally(), entries)
    assert report.tally.lost == 1
    assert report.tally.recall == 0.0
    assert any("LOST" in line for line in corpus.details([report]))


def test_a_read_of_what_lies_in_a_reported_owner_is_not_lost() -> None:
    # the engine counts SaveStrategy's miss once, as SaveStrategy's, not SaveStrategy.EPOCH's
    read = replace(entry("a.py", "true"), target=f"{TARGET}.forward", kind="attribute")
    imported = replace(read, kind="import")
    owner = seen("a.py")
    assert corpus.lost_references([read], [owner]) == []
    assert corpus.lost_references([imported], [owner]) == [imported.key]  # its own statement
    assert corpus.lost_references([read], []) == [read.key]


@dataclass(frozen=True)
class _Possible:
    """A finding as an engine with confidences may give it."""

    reference: Reference
    missing: dict[str, str]
    accepted: dict[str, str]
    excused: dict[str, str]
    confidence: str = "possible"
    fails: bool = False


def test_seen_findings_reads_counted_and_possible_ones() -> None:
    sites = (Site("a.py", 3, versions=(("transformers", "<5.0.0"),)), Site("b.py", 7))
    ref = Reference("transformers", TARGET, Kind.IMPORT, sites)
    counted = Finding("p", ref, {"4.48.0": "gone", "5.0.0": "gone"}, {}, None)
    accepted = Finding("p", ref, {"5.0.0": "gone"}, {"5.0.0": "accepted"}, None)
    possible = _Possible(ref, {"5.0.0": "gone"}, {}, {})
    found = corpus.seen_findings([counted, accepted, possible])
    assert [s.confidence.value for s in found] == ["proven", "possible"]
    assert found[0].releases == ("4.48.0", "5.0.0")
    assert found[0].sites == (("a.py", 3), ("b.py", 7))
    assert found[1].sites == (("b.py", 7),)  # a.py does not run on 5.0.0


def write_corpus(tmp_path: Path, triage: str) -> tuple[Path, Path]:
    manifest = tmp_path / "projects.toml"
    manifest.write_text('[[project]]\nname = "p"\nversion = "1.0"\n', encoding="utf-8")
    folder = tmp_path / "triage"
    folder.mkdir()
    (folder / "p.toml").write_text(triage, encoding="utf-8")
    return manifest, folder


TRUE_ENTRY = f"""
[[finding]]
package = "transformers"
target = "{TARGET}"
kind = "import"
path = "a.py"
verdict = "true"
upstream = "models/llama/modeling_llama.py: class gone in 4.48.0"
site = "a.py:10"
"""


@pytest.mark.parametrize(
    ("found", "status"),
    [((), 0), (("a.py",), 0), (("b.py",), 1)],
    ids=["nothing", "true", "untriaged"],
)
def test_main_exit_status_and_table(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    found: tuple[str, ...],
    status: int,
) -> None:
    manifest, folder = write_corpus(tmp_path, TRUE_ENTRY)
    findings = [seen(path) for path in found]
    figures = corpus.Tally(cells=10, unknown=1, seconds=1.5)
    monkeypatch.setattr(corpus, "run_project", lambda *a, **k: (findings, figures))
    argv = ["--manifest", str(manifest), "--triage", str(folder)]
    assert corpus.main(argv) == status
    out = capsys.readouterr().out
    assert "p 1.0" in out
    assert "10.0%" in out
    assert ("UNTRIAGED" in out) == (status == 1)
    assert corpus.main([*argv, "--json"]) == status
    data = json.loads(capsys.readouterr().out)
    assert data["overall"]["counted"] == len(found)


def test_a_failed_project_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest, folder = write_corpus(tmp_path, TRUE_ENTRY)

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("no wheel")

    monkeypatch.setattr(corpus, "run_project", broken)
    assert corpus.main(["--manifest", str(manifest), "--triage", str(folder)]) == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (TRUE_ENTRY.replace('verdict = "true"', 'verdict = "false"'), "needs class"),
        (TRUE_ENTRY.replace('verdict = "true"', 'verdict = "debatable"'), "needs why"),
        (TRUE_ENTRY.replace('site = "a.py:10"\n', ""), "needs site"),
        (TRUE_ENTRY + 'releases = "five"\n', "no specifier"),
        ("[[finding\n", "cannot read it as TOML"),
    ],
)
def test_bad_triage_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    manifest, folder = write_corpus(tmp_path, text)
    assert corpus.main(["--manifest", str(manifest), "--triage", str(folder)]) == 2
    assert message in capsys.readouterr().err


def test_the_corpus_tables_load() -> None:
    """The committed manifest and every triage table are well formed."""
    projects = corpus.load_projects(corpus.CORPUS / "projects.toml")
    assert len(projects) >= 12
    for project in projects:
        corpus.load_triage(corpus.CORPUS / "triage" / f"{project.name}.toml")
