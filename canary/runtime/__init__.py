"""Runtime tier: the patched training step against installed transformers/trl/peft.

Run with ``pytest canary/runtime`` (the runner does so inside each pin-set venv). Tiny
random-init models built from configs; the hub is offline and any network connection
fails the test. Cases marked ``gpu`` need CUDA and skip without it.
"""

# huggingface_hub, transformers and datasets read these at import: set before they load.
# The runner sets them for the tier's subprocess (canary.runtime.tier), the conftest for a
# run started by hand. Here, not in tier: the conftest reads them without loading the
# runner's modules (venvs, installers, pins, tags.toml and tomli on 3.10).
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
