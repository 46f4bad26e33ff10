"""Runtime tier: the patched training step against installed transformers/trl/peft.

Run with ``pytest canary/runtime`` (the runner does so inside each pin-set venv). Tiny
random-init models built from configs; the hub is offline and any network connection
fails the test. Cases marked ``gpu`` need CUDA and skip without it.
"""
