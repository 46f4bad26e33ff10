"""The rewrites of the metamorphic test (tests/rewrites.py) preserve behaviour: a small
package that exercises each kind computes the same results, imported and run, after every
kind alone and all together; and each kind does rewrite it (a no-op would prove nothing)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from rewrites import KINDS, Rewrite, rewrite_tree

PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/mod.py": textwrap.dedent(
        '''
        """A module that exercises every rewrite."""
        import json
        import math
        from dataclasses import dataclass


        def scale(value, factor=2, *, offset=0):
            """Docstring."""
            return value * factor + offset


        class Base:
            def total(self, items):
                return sum(items)


        class Trainer(Base):
            flag = True

            def __init__(self, steps, model=None):
                self.steps = steps
                self.model = model
                self.model_accepts_loss_kwargs = model is not None and steps > 1

            def step(self, values, num_items=None):
                kwargs = {}
                if num_items is not None:
                    kwargs["num_items"] = num_items
                else:
                    kwargs["num_items"] = len(values)
                loss = super().total(values)
                if not (self.flag and self.model is None):
                    loss = scale(loss, factor=3, offset=1)
                mode = "sum" if kwargs["num_items"] > 2 else "mean"
                result: float = loss / kwargs["num_items"]
                for i, v in enumerate(values):
                    if i % 2 == 0 or v < 0:
                        result += math.floor(v)
                return json.dumps([mode, result, self.model_accepts_loss_kwargs])
        '''
    ),
}

RUN = """
from pkg.mod import Trainer
print(Trainer(3).step([1, 2, 3, -4]))
print(Trainer(1, model="m").step([5, 6], num_items=4))
print(Trainer(2, model=object()).step([0.5, 7.25, 9]))
"""


def _output(root: Path, files: dict[str, str]) -> str:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    done = subprocess.run(
        [sys.executable, "-c", RUN], cwd=root, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    "kinds", [(k,) for k in KINDS] + [KINDS], ids=lambda k: k[0].value if len(k) == 1 else "all"
)
def test_a_rewrite_keeps_what_the_code_computes(tmp_path, kinds):
    expected = _output(tmp_path / "original", PACKAGE)
    rewritten = rewrite_tree(PACKAGE, kinds, followed=frozenset({"model_accepts_loss_kwargs"}))
    assert rewritten != PACKAGE
    if kinds != (Rewrite.REFORMAT,):
        reformatted = rewrite_tree(PACKAGE, (Rewrite.REFORMAT,))
        assert rewritten["pkg/mod.py"] != reformatted["pkg/mod.py"], "the kind changed nothing"
    assert _output(tmp_path / "rewritten", rewritten) == expected


# super().compute_loss leaving the package for transformers' Trainer, whose order
# canary/checks/contracts.py declares; an ancestor of the package defining it wins.
OUTSIDE_SUPER = {
    "pkg/base.py": "from transformers import Trainer\nclass Base(Trainer):\n    pass\n",
    "pkg/sft.py": textwrap.dedent("""\
        from pkg.base import Base
        class SFT(Base):
            def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
                n = num_items_in_batch
                out = super().compute_loss(model, inputs, return_outputs=True, num_items_in_batch=n)
                return out
        """),
}


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("    pass\n", "super().compute_loss(model, inputs, True, n)"),
        ("    def compute_loss(self, *args, **kwargs):\n        return 0\n",
         "super().compute_loss(model, inputs, return_outputs=True, num_items_in_batch=n)"),
    ],
)  # fmt: skip
def test_a_super_call_leaving_the_package_binds_by_the_declared_order(base, expected):
    files = {
        **OUTSIDE_SUPER,
        "pkg/base.py": OUTSIDE_SUPER["pkg/base.py"].replace("    pass\n", base),
    }
    assert expected in rewrite_tree(files, (Rewrite.ARGUMENTS,))["pkg/sft.py"]
