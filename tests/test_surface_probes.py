"""A call of the project's own presence probe (a function whose every truthy return lies past
its upstream imports and ``hasattr`` tests) makes the code it gates require what it tests."""

from __future__ import annotations

import pytest
from surface_fakes import project_surface

CONFIG = "transformers.Mistral4Config"
PROBE = (
    "def available():\n"
    "    try:\n"
    "        from transformers import Mistral4Config\n"
    "        return True\n"
    "    except Exception:\n"
    "        return False\n"
)
HASATTR = (
    "def available():\n"
    "    try:\n"
    "        from transformers.core import Loader\n"
    "        return hasattr(Loader, 'convert')\n"
    "    except Exception:\n"
    "        return False\n"
)
USE = "from transformers import Mistral4Config\n"
GATED = "def run():\n    if not available():\n        return None\n    " + USE
TARGET = CONFIG


def requires(tmp_path, probe: str, caller: str = GATED, target: str = TARGET) -> tuple[str, ...]:
    """What the one site of ``target`` requires, the probe in another module."""
    files = {
        "proj/__init__.py": "",
        "proj/probe.py": probe,
        "proj/m.py": "from proj.probe import available\n" + caller,
    }
    refs = project_surface(tmp_path, files)
    sites = next(r for r in refs if r.target == target).sites
    (site,) = (s for s in sites if s.path == "proj/m.py")
    return site.requires


def test_an_early_return_on_a_failed_probe_requires_its_import(tmp_path):
    assert requires(tmp_path, PROBE) == (CONFIG,)


def test_a_probe_gating_an_if_block_requires_its_import(tmp_path):
    gated = "def run():\n    if available():\n        " + USE
    assert requires(tmp_path, PROBE, gated) == (CONFIG,)


def test_a_hasattr_return_requires_the_import_and_the_attribute(tmp_path):
    gated = GATED.replace(USE, "from transformers.core import Loader\n    Loader.convert(1)\n")
    assert requires(tmp_path, HASATTR, gated, "transformers.core.Loader.convert") == (
        "transformers.core",
        "transformers.core.Loader",
        "transformers.core.Loader.convert",
    )


def test_the_other_branch_of_a_probe_requires_nothing(tmp_path):
    gated = "def run():\n    if available():\n        return 1\n    " + USE
    assert requires(tmp_path, PROBE, gated) == ()


@pytest.mark.parametrize(
    "probe",
    [
        PROBE.replace("return False", "return True"),  # true without the import
        PROBE.replace("        return True\n", "") + "    return 1\n",  # true past a failure
        PROBE + "    return True\n",  # unreachable, but read as a path
        PROBE.replace("return True", "return flag()"),  # a value it cannot read
        PROBE.replace("Mistral4Config\n", "Mistral4Config\n        setup()\n"),  # more than imports
    ],
)
def test_a_function_true_without_its_imports_is_no_probe(tmp_path, probe):
    assert requires(tmp_path, probe) == ()
