"""What one upstream package's code relies on in another's signatures: each is declared
once here, used by the check of the caller and held by a check of the callee's package."""

from __future__ import annotations

#: transformers' ``Trainer.compute_loss`` positional parameters after ``self``. trl's trainers
#: call ``super().compute_loss(...)``; the count they pass at index 3 is
#: ``num_items_in_batch=`` only while this order holds, which
#: test_transformers.py::test_compute_loss_takes_num_items_in_batch asserts on every release.
TRAINER_COMPUTE_LOSS = ("model", "inputs", "return_outputs", "num_items_in_batch")
