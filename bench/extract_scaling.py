"""How extraction time grows with a module's size: generated modules of 1k to 64k
definitions, each using upstream names, timed in one run; prints seconds per definition.

    python bench/extract_scaling.py                 # 1k, 4k, 16k, 64k definitions
    python bench/extract_scaling.py --sizes 1000 2000

Linear extraction keeps the time per definition flat as the module grows; a quadratic
step (sites merged one at a time, each merge sorting them all again) makes it grow with
the size. Each module mixes the shapes extraction follows: imports at the top, a function
calling an upstream function, a class subclassing an upstream class and overriding a
method, and a patch assigning over an upstream attribute.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from canary.surface.extract import extract

HEADER = (
    "import transformers\n"
    "from transformers import Trainer, TrainingArguments\n"
    "from transformers.models.llama import modeling_llama\n\n"
)
# Four definitions per block, so a module of N definitions has N // 4 blocks.
BLOCK = """
def helper_{i}(model, inputs):
    return transformers.trainer.Trainer.compute_loss(model, inputs, num_items_in_batch={i})


class Trainer{i}(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        return super().compute_loss(model, inputs, return_outputs, **kwargs)


def forward_{i}(self, *args, **kwargs):
    return modeling_llama.LlamaForCausalLM.forward(self, *args, **kwargs)


modeling_llama.LlamaForCausalLM.forward = forward_{i}
"""


def module(definitions: int) -> str:
    return HEADER + "".join(BLOCK.format(i=i) for i in range(definitions // 4))


def timed(definitions: int) -> tuple[float, int, int]:
    """(CPU seconds, bytes, references) for one module of ``definitions`` definitions."""
    text = module(definitions)
    with tempfile.TemporaryDirectory(prefix="canary-bench-") as folder:
        root = Path(folder)
        (root / "proj").mkdir()
        (root / "proj" / "big.py").write_text(text)
        # CPU time of this process: on a shared machine, wall time swings with the load
        started = time.process_time()
        references = extract(root, ["proj/big.py"], upstream=["transformers"])
        seconds = time.process_time() - started
    return seconds, len(text.encode()), len(references)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000, 64000])
    args = parser.parse_args()
    first = None
    print(f"{'definitions':>11} {'module':>9} {'refs':>6} {'cpu s':>8} {'us/def':>8} {'ratio':>6}")
    for size in args.sizes:
        seconds, size_bytes, refs = timed(size)
        per = seconds / size * 1e6
        first = first or per
        print(
            f"{size:>11,} {size_bytes / 1e6:>7.2f}MB {refs:>6} {seconds:>8.2f} {per:>8.1f} "
            f"{per / first:>6.2f}"
        )


if __name__ == "__main__":
    main()
