"""peft: how the fixes reach the base model under an adapter."""

import pytest

from canary.catalog import check

pytestmark = pytest.mark.upstream("peft")

PEFT_MODEL = "peft/peft_model.py"


@check(reads=PEFT_MODEL, fix="chunked NLL loss")
def test_peft_model_get_base_model(upstream):
    """PeftModel.get_base_model exists: the chunked loss patches the model it returns, so the
    adapter layers stay in the forward."""
    upstream.module(PEFT_MODEL).cls("PeftModel").method("get_base_model")


@check(reads=PEFT_MODEL, fix="accepts_loss_kwargs shadowing")
def test_peft_model_forwards_attributes(upstream):
    """PeftModel defines __getattr__ forwarding to the base model: the reason the
    accepts_loss_kwargs fix reads type(m).__dict__ instead of hasattr."""
    upstream.module(PEFT_MODEL).cls("PeftModel").method("__getattr__")
