"""What one upstream package's code relies on in another's signatures, declared once: the
caller's check binds by it; the behaviour sweep runs the call on every release."""

from __future__ import annotations

#: transformers' ``Trainer.compute_loss`` positional parameters after ``self``, the same on
#: every release from 4.46.0 (trainer.py). trl's trainers call ``super().compute_loss(...)``;
#: a count they pass at index 3 is ``num_items_in_batch=``. No transformers check holds the
#: order, on purpose: the fixes pass the count by keyword, so a keyword-only
#: ``num_items_in_batch`` breaks none of them (tests/test_planted_signatures.py), and would
#: break only a positional trl call, which the sweep's SFT runs would show.
TRAINER_COMPUTE_LOSS = ("model", "inputs", "return_outputs", "num_items_in_batch")
