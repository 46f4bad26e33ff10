"""Plant one behaviour drift per tree in transformers 4.57.5 for ``runtime --local``.

``python bench/sweep_planted.py WHEEL OUT`` unpacks the wheel once per drift under OUT and
changes one thing in each (an anchor found exactly once, or it stops), then prints the two
commands per tree: the static tier (which passes on all four) and the sweep (which fails).
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

# kind -> (file, anchor, replacement): each argued in docs/sweep.md.
PLANTS = {
    "count": (  # data flow: the count divided per micro-batch on the training-loop path
        "transformers/trainer.py",
        "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)",
        "tr_loss_step = self.training_step(model, inputs, num_items_in_batch / len(batch_samples))",
    ),
    "pop": (  # data flow: the value popped from **kwargs before loss_function
        "transformers/models/llama/modeling_llama.py",
        "            loss = self.loss_function(logits=logits, labels=labels, "
        "vocab_size=self.config.vocab_size, **kwargs)",
        '            kwargs.pop("num_items_in_batch", None)\n'
        "            loss = self.loss_function(logits=logits, labels=labels, "
        "vocab_size=self.config.vocab_size, **kwargs)",
    ),
    "branch": (  # returns by branch: no count once more than one micro-batch is gathered
        "transformers/trainer.py",
        "        return num_items_in_batch\n\n    def get_batch_samples",
        "        if len(batch_samples) > 1:\n            return None\n"
        "        return num_items_in_batch\n\n    def get_batch_samples",
    ),
    "mixin": (  # behaviour moved into a mixin of another file (every generation model)
        "transformers/generation/utils.py",
        "    def load_custom_generate(",
        "    accepts_loss_kwargs = False\n\n    def load_custom_generate(",
    ),
}


def plant(wheel: Path, out: Path) -> None:
    for kind, (path, anchor, replacement) in PLANTS.items():
        tree = out / kind
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(tree)
        target = tree / path
        text = target.read_text("utf-8")
        if text.count(anchor) != 1:
            raise SystemExit(f"{kind}: anchor found {text.count(anchor)} times in {path}")
        target.write_text(text.replace(anchor, replacement), "utf-8")
        print(
            f"# {kind}\npytest canary/checks/test_transformers.py -p no:cacheprovider "
            f"--canary-local transformers@4.57.5={tree}\n"
            f"python -m canary runtime --local transformers@4.57.5={tree} --json {kind}.json"
        )


if __name__ == "__main__":
    plant(Path(sys.argv[1]), Path(sys.argv[2]))
