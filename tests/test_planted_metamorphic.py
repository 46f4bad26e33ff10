"""Planted drifts on the other side of each generalisation the metamorphic test asked of the
engine (tests/test_metamorphic.py): what a harmless rewrite may change, a breaking change
that looks like it must still fail its check.

* locals compared modulo renaming -- a renamed *parameter* is not a renamed local: callers
  pass it by name, so the check that follows it must fail.
"""

from __future__ import annotations

import importlib
import re

import pytest
import test_planted_flow as flow

COMPUTE_LOSS_CHECK = "test_compute_loss_passes_num_items_in_kwargs"


@pytest.fixture(scope="module")
def checks(request):
    """The catalog's check modules, their markers declared first (as the planted tests do)."""
    for marker in ("upstream(package): the upstream package a check module covers",
                   "canary_check(spec): a catalog check"):  # fmt: skip
        request.config.addinivalue_line("markers", marker)
    return [importlib.import_module(f"canary.checks.test_{p}") for p in ("transformers", "trl")]


def _compute_loss_plant() -> flow.Plant:
    return next(p for p in flow.PLANTS if p.check == COMPUTE_LOSS_CHECK)


def test_a_renamed_local_keeps_the_compute_loss_check_green(checks):
    plant = _compute_loss_plant()
    renamed = re.sub(r"\bkwargs\b", "forward_kwargs", plant.source)
    assert "forward_kwargs['num_items_in_batch']" not in plant.source
    assert flow._run(checks, plant, renamed) is None


def test_a_renamed_parameter_fails_the_compute_loss_check(checks):
    plant = _compute_loss_plant()
    # compute_loss's own parameter, everywhere it is read; the dict key stays a string.
    start = plant.source.index("    def compute_loss(")
    head, body = plant.source[:start], plant.source[start:]
    renamed = head + re.sub(r"(?<!['\"])\bnum_items_in_batch\b(?!['\"])", "num_items", body)
    assert "def compute_loss(self, model, inputs, return_outputs=False, num_items=None)" in renamed
    drift = flow._run(checks, plant, renamed)
    assert drift is not None, "a renamed parameter passed the check"
    assert "breaks the fix 'chunked NLL loss'" in drift
