#!/usr/bin/env bash
# The whole GPU tier in one call on a lent accelerator (one GPU, well under 8 minutes).
#
# Run from the repository root:  bash canary/runtime/gpu_tier.sh
# Installs nothing if torch, transformers, peft and trl already import (a preinstalled
# torch is used as is); otherwise installs them from the .whl/ folder only, no index.
# Writes the report to $OUT/gpu_report.json when $OUT is set (else ./gpu_report.json),
# plus the pytest log and JUnit XML beside it.
set -euo pipefail
cd "$(dirname "$0")/../.."

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
PY=${PYTHON:-python3}
OUT_DIR=${OUT:-.}
mkdir -p "$OUT_DIR"

have_stack() {
    "$PY" -c 'import torch, transformers, peft, trl, pytest, packaging' 2>/dev/null
}

if ! have_stack; then
    if [ ! -d .whl ]; then
        echo "gpu_tier: torch/transformers/peft/trl/pytest do not import and there is no .whl/" >&2
        exit 2
    fi
    echo "gpu_tier: installing from .whl/ (no index)"
    "$PY" -m pip install --quiet --no-index --find-links .whl \
        torch transformers peft trl accelerate datasets pytest packaging
fi

"$PY" - <<'PYEOF'
import torch, transformers, peft, trl, accelerate
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
print("transformers", transformers.__version__, "peft", peft.__version__,
      "trl", trl.__version__, "accelerate", accelerate.__version__)
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(), torch.cuda.get_device_capability())
PYEOF

# The tier itself: the gpu-marked cases only (the CPU tier runs in CI). The repo root is on
# sys.path through pytest's rootdir import, so canary need not be installed; -p no:canary
# keeps an installed static-tier plugin out of this run. 420 s leaves room under 8 minutes.
set +e
CANARY_GPU_REPORT="$OUT_DIR/gpu_report.json" timeout 420 "$PY" -m pytest -p no:canary \
    -p no:cacheprovider canary/runtime/test_gpu.py -m gpu -v -s -rs \
    --junitxml="$OUT_DIR/gpu_junit.xml" 2>&1 | tee "$OUT_DIR/gpu_pytest.log"
rc=${PIPESTATUS[0]}
set -e
if [ -f "$OUT_DIR/gpu_report.json" ]; then
    echo "gpu_tier: report at $OUT_DIR/gpu_report.json"
fi
exit "$rc"
