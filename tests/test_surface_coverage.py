"""``surface --uncovered`` (private references no check reads) and ``--stale`` (downstream
entries whose upstream names the project no longer uses)."""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from pathlib import Path

import pytest

from canary.fixes import Fix
from canary.fixes.downstream import DOWNSTREAM_PATCHES
from canary.surface import coverage
from canary.surface.model import Kind, Reference, Site

CATALOG = '''
import pytest
from canary.catalog import check, row

pytestmark = pytest.mark.upstream("toy")
CORE = "toy/core.py"
ENGINE = "Engine"


def _engine(upstream):
    return upstream.module(CORE).cls(ENGINE)


@check(reads=CORE, fix="chunked NLL loss")
def test_engine_run(upstream):
    """Engine.run exists (the docstring names _forgotten, which is not a lookup)."""
    _engine(upstream).method("run")


@check(reads=CORE, fix="chunked NLL loss")
def test_engine_step_mentions_the_division(upstream):
    """Engine.step divides by the accumulation steps."""
    step = _engine(upstream).method("step")
    assert "loss / steps" in step.source


@check.each(
    row("test_helper_exists", path="toy/util.py", name="_helper"),
    fix="chunked NLL loss",
)
def helper_exists(upstream, path, name):
    """{path} defines {name}."""
    upstream.module(path).function(name)
'''


@pytest.fixture(autouse=True)
def catalog_markers(pytestconfig: pytest.Config) -> None:
    """Catalog modules mark their checks as a canary run registers it (this session is
    not one, and --strict-markers is on), as ``python -m canary surface`` imports them
    outside pytest altogether."""
    for line in ("upstream(package): ...", "canary_check(spec): ..."):
        if line not in pytestconfig.getini("markers"):
            pytestconfig.addinivalue_line("markers", line)


@pytest.fixture
def catalog(tmp_path: Path) -> list[coverage.CheckReads]:
    path = tmp_path / "toy_checks.py"
    path.write_text(CATALOG)
    spec = importlib.util.spec_from_file_location("toy_checks", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["toy_checks"] = module
    try:
        spec.loader.exec_module(module)
        return coverage.catalog_reads([module])
    finally:
        del sys.modules["toy_checks"]


def ref(target: str, kind: Kind = Kind.ATTRIBUTE, anchor: str | None = None) -> Reference:
    package = target.split(".", maxsplit=1)[0]
    return Reference(package, target, kind, (Site("proj/patch.py", 4),), anchor)


def test_each_check_reads_its_files_and_the_names_its_code_looks_up(catalog):
    by_test = {reads.test: reads for reads in catalog}
    assert set(by_test) == {
        "test_engine_run",
        "test_engine_step_mentions_the_division",
        "test_helper_exists",
    }
    run = by_test["test_engine_run"]
    assert run.files == ("toy/core.py",)
    assert {"Engine", "run"} <= run.names  # through the helper and the module constant
    assert "_forgotten" not in run.names  # the docstring says, the code does not look up
    assert by_test["test_helper_exists"].files == ("toy/util.py",)
    assert "_helper" in by_test["test_helper_exists"].names  # a table row's values


def test_uncovered_lists_the_private_and_patched_references_no_check_reads(catalog):
    references = [
        ref("toy.core.Engine.run", Kind.PATCH),  # test_engine_run reads it
        ref("toy.core.Engine._cache"),  # private, nobody looks it up
        ref("toy.core.Engine.reset", Kind.PATCH),  # patched, nobody looks it up
        ref("toy.util._helper"),  # a table row reads it
        ref("toy.core.Engine"),  # public and only read: not the catalog's to-do
        ref("toy.core"),  # a module import: public
        ref("other._thing"),  # another package: no check of toy covers it
    ]
    found = coverage.uncovered(references, catalog)
    assert [r.target for r in found] == [
        "toy.core.Engine._cache",
        "toy.core.Engine.reset",
        "other._thing",
    ]
    text = coverage.render_uncovered(found, private=5)
    assert text.splitlines()[0] == "3 of 5 private or patched references are read by no check"
    assert "  toy patch: toy.core.Engine.reset  (proj/patch.py:4)" in text


def test_an_anchor_is_covered_only_by_a_check_that_names_a_fragment_of_its_text(catalog):
    named = ref("toy.core.Engine.step", Kind.ANCHOR, anchor="loss = loss / steps")
    unnamed = ref("toy.core.Engine.run", Kind.ANCHOR, anchor="return self.forward(x)")
    assert coverage.uncovered([named, unnamed], catalog) == [unnamed]


def test_a_re_export_is_matched_where_resolution_says_it_is_defined(catalog):
    exported = ref("toy._Engine_alias.run", Kind.PATCH)
    assert coverage.uncovered([exported], catalog) == [exported]
    defined = {exported.key: "toy.core.Engine.run"}
    assert coverage.uncovered([exported], catalog, defined_at=lambda r: defined[r.key]) == []


def test_the_shipped_catalog_is_read_whole():
    reads = coverage.catalog_reads(coverage.shipped_catalog())
    assert len(reads) >= 143  # every check and table row of canary/checks
    assert {r.package for r in reads} == {"transformers", "trl", "peft"}
    # unsloth-zoo's checkpoint alias patch is protected by a real check.
    checkpoint = ref("transformers.modeling_utils.checkpoint", Kind.PATCH)
    assert coverage.uncovered([checkpoint], reads) == []


def test_every_downstream_entry_names_its_upstream_as_module_colon_qualname():
    spelled = re.compile(r"(transformers|trl|peft)(\.\w+)*(:\w+(\.\w+)*)?")
    for patch in DOWNSTREAM_PATCHES:
        assert patch.upstream, patch.name
        for name in patch.upstream:
            assert spelled.fullmatch(name), f"{patch.name}: {name}"


def test_stale_entries_are_those_whose_project_uses_none_of_their_upstream_names():
    references = [
        ref("transformers.modeling_utils.checkpoint", Kind.PATCH),
        # A re-export reaches the same class: the entry still holds.
        ref("transformers.integrations.FP8Linear"),
    ]
    found = coverage.staleness(references, DOWNSTREAM_PATCHES, "unsloth_zoo")
    assert {item.patch.reference.split("#")[0] for item in found} == {"unsloth-zoo"}
    stale = {item.patch.name for item in found if item.stale}
    assert "modeling_utils checkpoint alias" not in stale
    assert "FP8Linear construction" not in stale
    assert "bitsandbytes Linear4bit replacement" in stale
    text = coverage.render_staleness(found, "unsloth_zoo")
    assert "  stale: 'bitsandbytes Linear4bit replacement' (unsloth-zoo#491)" in text
    assert (
        "    no longer used: transformers.integrations.bitsandbytes:replace_with_bnb_linear" in text
    )


def test_an_entry_naming_no_upstream_cannot_be_told_stale():
    bare = Fix(name="bare", summary="...", reference="proj#1")
    (item,) = coverage.staleness([], [bare], "proj")
    assert not item.stale
    assert "cannot tell: 'bare' names no upstream" in coverage.render_staleness([item], "proj")


@pytest.mark.parametrize(
    ("target", "used"),
    [
        ("transformers.cache_utils.DynamicCache", True),
        ("transformers.cache_utils.DynamicCache.update", True),  # inside it
        ("transformers.DynamicCache", True),  # re-exported
        ("transformers.cache_utils", False),  # the module alone is not the class
        ("transformers.cache_utils.DynamicCacheLayer", False),  # a longer name
        ("trl.DynamicCache", False),  # another package
    ],
)
def test_uses_matches_a_name_itself_inside_it_or_re_exported(target, used):
    assert coverage.uses([ref(target)], "transformers.cache_utils:DynamicCache") is used


def test_render_lists_nothing_when_nothing_is_uncovered():
    assert coverage.render_uncovered([], private=0) == textwrap.dedent(
        "0 of 0 private or patched references are read by no check\n"
    )


def test_a_name_only_the_projects_text_mentions_is_not_called_stale():
    # unsloth-zoo writes "from peft.tuners.lora.layer import VARIANT_KWARG_KEYS" into source
    # it generates: no code reference, yet the entry still protects it.
    texts = {
        "unsloth_zoo/compiler.py": 'x = 1\nsource += "from peft.tuners.lora.layer import '
        'VARIANT_KWARG_KEYS"\n',
        "unsloth_zoo/other.py": "VARIANT_KWARG_KEYS_OLD = 2\n",  # another word: not a mention
    }
    found = coverage.staleness([], DOWNSTREAM_PATCHES, "unsloth-zoo", texts=texts)
    variant = next(item for item in found if item.patch.name == "LoRA variant kwargs injection")
    assert variant.mentions == ("unsloth_zoo/compiler.py:2",)
    assert not variant.stale
    text = coverage.render_staleness(found, "unsloth-zoo")
    assert "  used by no code, but mentioned at unsloth_zoo/compiler.py:2: 'LoRA variant" in text
    assert "stale: 'LoRA variant kwargs injection'" not in text


def test_the_surface_command_lists_uncovered_and_stale_from_extraction_alone(
    tmp_path, capsys, monkeypatch
):
    from canary import cli

    monkeypatch.setenv("CANARY_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "tags.toml").write_text(
        (Path(__file__).parents[1] / "tags.toml").read_text("utf-8")
    )
    root = tmp_path / "unsloth_zoo"
    (root / "unsloth_zoo").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "unsloth_zoo"\nversion = "1.0"\ndependencies = ["transformers>=4.46"]\n'
    )
    (root / "unsloth_zoo" / "patch.py").write_text(
        "import transformers.modeling_utils\n"
        "transformers.modeling_utils.checkpoint = print\n"
        "transformers.modeling_utils._secret_helper = print\n"
    )
    tags = ["--tags-file", str(tmp_path / "tags.toml")]
    assert cli.main(["surface", str(root), "--uncovered", *tags]) == 0
    out = capsys.readouterr().out
    assert out.startswith("unsloth_zoo: 1 of 2 private or patched references are read by no check")
    assert "transformers patch: transformers.modeling_utils._secret_helper" in out
    assert cli.main(["surface", str(root), "--stale", *tags]) == 0
    out = capsys.readouterr().out
    assert "stale: 'quantizers should_convert_module' (unsloth-zoo#488)" in out
    assert "'modeling_utils checkpoint alias'" not in out  # still patched
