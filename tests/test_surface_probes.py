"""A call of the project's own presence probe (a function whose every success lies past
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


GETTER = (
    "def available():\n"
    "    try:\n"
    "        from transformers import Mistral4Config\n"
    "        return Mistral4Config\n"
    "    except ImportError:\n"
    "        return\n"
)


def test_a_getter_returning_what_it_imported_is_a_probe(tmp_path):
    # mlflow's _try_import_conversational_pipeline: the class, or None
    assert requires(tmp_path, GETTER) == (CONFIG,)


@pytest.mark.parametrize("test", ["cls := available()", "available()", "available() and flag"])
def test_a_function_returning_only_behind_a_probe_is_a_probe_too(tmp_path, test):
    # mlflow's `if cp := _try_import_pipeline(): return isinstance(p, cp)`, then False
    behind = f"def behind(flag=True):\n    if {test}:\n        return 1\n    return False\n"
    gated = behind + "def run():\n    if behind():\n        Mistral4Config.x = 1\n"
    assert requires(tmp_path, GETTER, USE + gated, f"{CONFIG}.x") == (CONFIG,)
    # another way to succeed after it: no probe
    loose = behind.replace("    return False\n", "    return True\n")
    gated = loose + "def run():\n    if behind():\n        Mistral4Config.x = 1\n"
    assert requires(tmp_path, GETTER, USE + gated, f"{CONFIG}.x") == ()


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


REASON = (
    "from typing import Optional\n"
    "def available() -> Optional[str]:\n"
    "    try:\n"
    "        from transformers import Mistral4Config\n"
    "    except Exception:\n"
    "        return 'this transformers has no Mistral4Config'\n"
    "    return None\n"
)


@pytest.mark.parametrize(
    "caller",
    [
        "def run():\n    if available() is not None:\n        return None\n    " + USE,
        "def run():\n    if available():\n        return None\n    " + USE,
        "def run():\n    reason = available()\n    if reason is not None:\n        return\n    "
        + USE,
        "def run():\n    if available() is None:\n        " + USE,
    ],
)
def test_where_a_reason_probe_gave_no_reason_its_import_is_required(tmp_path, caller):
    assert requires(tmp_path, REASON, caller) == (CONFIG,)


@pytest.mark.parametrize(
    "probe",
    [
        REASON.replace("'this transformers has no Mistral4Config'", "''"),  # an empty reason
        REASON.replace("'this transformers has no Mistral4Config'", "None"),  # None on failure
        REASON.replace("    return None\n", "    return 'ok'\n"),  # success says something
    ],
)
def test_a_function_none_without_its_imports_is_no_reason_probe(tmp_path, probe):
    caller = "def run():\n    if available() is not None:\n        return None\n    " + USE
    assert requires(tmp_path, probe, caller) == ()


def test_a_probe_checks_each_name_of_a_literal_loop_and_may_bind_its_own_names(tmp_path):
    probe = (
        "def available():\n"
        "    try:\n"
        "        from transformers import core as cml\n"
        "    except Exception:\n"
        "        return False\n"
        "    for name in ('Loader', 'Saver'):\n"
        "        if not hasattr(cml, name):\n"
        "            return False\n"
        "    fields = set(getattr(cml.Loader, '__slots__', ()))\n"
        "    if 'force' not in fields:\n"
        "        return False\n"
        "    return True\n"
    )
    gated = GATED.replace(USE, "from transformers.core import Saver\n")
    # a site requires all the probe found: Saver, checked by the loop past the binding
    assert requires(tmp_path, probe, gated, "transformers.core.Saver") == (
        "transformers.core",
        "transformers.core.Loader",
        "transformers.core.Saver",
    )
