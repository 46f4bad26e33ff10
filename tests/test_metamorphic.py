"""The metamorphic test's fast slice (bench/metamorphic.py runs it over released trees): each
behaviour-preserving rewrite (tests/rewrites.py) of the planted-drift snippets keeps every
check's verdict, both ways: a released snippet rewritten still passes, and a breaking plant
rewritten still fails, naming its fix (a rewrite never hides a drift)."""

from __future__ import annotations

import importlib

import pytest
import test_planted_flow as flow
import test_planted_mro as mro
from rewrites import KINDS, Rewrite, rewrite_tree

FOLLOWED = frozenset({"model_accepts_loss_kwargs"})
# The kinds a single snippet can take: the mixin kind needs a package tree (below).
SNIPPET_KINDS = [(k,) for k in KINDS if k is not Rewrite.MIXIN] + [
    tuple(k for k in KINDS if k is not Rewrite.MIXIN)
]


@pytest.fixture(scope="module")
def checks(request):
    """The catalog's check modules, their markers declared first (as the planted tests do)."""
    for marker in ("upstream(package): the upstream package a check module covers",
                   "canary_check(spec): a catalog check"):  # fmt: skip
        request.config.addinivalue_line("markers", marker)
    return {
        p: importlib.import_module(f"canary.checks.test_{p}")
        for p in ("transformers", "trl", "peft")
    }


def _kind_id(kinds: tuple[Rewrite, ...]) -> str:
    return kinds[0].value if len(kinds) == 1 else "all"


def _rewritten(plant: flow.Plant, source: str, kinds: tuple[Rewrite, ...]) -> flow.Plant:
    files = rewrite_tree({plant.path: source, **dict(plant.others)}, kinds, followed=FOLLOWED)
    others = tuple((p, files[p]) for p, _ in plant.others)
    return flow.Plant(**{**vars(plant), "source": files[plant.path], "others": others})


@pytest.mark.parametrize("kinds", SNIPPET_KINDS, ids=_kind_id)
@pytest.mark.parametrize("plant", flow.PLANTS, ids=[p.name for p in flow.PLANTS])
def test_a_rewrite_keeps_a_planted_snippets_verdict(checks, plant, kinds):
    catalog = list(checks.values())
    released = _rewritten(plant, plant.source, kinds)
    assert flow._run(catalog, released, released.source) is None, "released snippet rewritten"
    planted = _rewritten(plant, flow._planted(plant), kinds)
    drift = flow._run(catalog, planted, planted.source)
    if plant.breaks is None:
        assert drift is None, f"harmless plant rewritten raised drift:\n{drift}"
    else:
        assert drift is not None, "breaking plant rewritten stayed green"


@pytest.mark.parametrize("kinds", [(k,) for k in KINDS] + [KINDS], ids=_kind_id)
@pytest.mark.parametrize("plant", mro.PLANTS, ids=[p.name for p in mro.PLANTS])
def test_a_rewrite_keeps_a_planted_trees_verdict(checks, tmp_path, plant, kinds):
    catalog = checks["trl"]
    base = {"trl/trainer/base_trainer.py": mro.BASE_TRAINER}
    for name, sft in (("released", mro.RELEASED), ("planted", plant.sft)):
        files = rewrite_tree({**base, mro.SFT: sft, **plant.others}, kinds, followed=FOLLOWED)
        others = {p: t for p, t in files.items() if p != mro.SFT}
        rewritten = mro.Plant(plant.name, plant.check, files[mro.SFT], others, plant.breaks)
        drift = mro._run(catalog, tmp_path / name, rewritten, rewritten.sft)
        if name == "released" or plant.breaks is None:
            assert drift is None, f"{name} tree rewritten raised drift:\n{drift}"
        else:
            assert drift is not None, "breaking plant rewritten stayed green"
