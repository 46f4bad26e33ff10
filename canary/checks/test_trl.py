"""trl: the trainer the chunked loss runs under."""

import pytest

from canary.catalog import check

pytestmark = pytest.mark.upstream("trl")

SFT_TRAINER = "trl/trainer/sft_trainer.py"


@check(reads=SFT_TRAINER, fix="chunked NLL loss")
def test_sft_trainer_exists(upstream):
    """trl/trainer/sft_trainer.py defines SFTTrainer with its own compute_loss, the step the
    chunked loss is patched under."""
    sft_trainer = upstream.module(SFT_TRAINER).cls("SFTTrainer")
    sft_trainer.method("compute_loss")
