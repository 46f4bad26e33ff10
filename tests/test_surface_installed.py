"""A submodule name the project puts a module of its own under in ``sys.modules`` may be
its module, not upstream's: what is read through it is undecided, never counted."""

from __future__ import annotations

import pytest
from surface_fakes import project_surface

VENDORED = "transformers.models.deepseek_v4"
READ = f"{VENDORED}.modeling_deepseek_v4.Rotary.axis"
USE = f"""\
def load():
    register()
    m = importlib.import_module("{VENDORED}.modeling_deepseek_v4")
    return m.Rotary.axis, transformers.models.llama.LlamaModel
"""


def undecided(tmp_path, register: str) -> dict[str, str]:
    """Why each site of the vendored read and of an unrelated one is undecided, with
    ``register`` (a function body) putting a module in ``sys.modules``."""
    body = f"import importlib, transformers\n{register}{USE}"
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": body})
    return {
        r.target: r.sites[0].undecided for r in refs if r.target.endswith(("axis", "LlamaModel"))
    }


@pytest.mark.parametrize(
    ("register", "line"),
    [
        (f"import sys\ndef register():\n    sys.modules['{VENDORED}'] = object()\n", 4),
        # prismaquant's vendored/__init__.py: the name held by a local bound once
        (
            f"import sys\ndef register():\n    pkg = '{VENDORED}'\n"
            "    sys.modules[pkg] = object()\n",
            5,
        ),
        (f"import sys as _sys\ndef register():\n    _sys.modules['{VENDORED}'] = object()\n", 4),
    ],
)
def test_a_read_through_a_module_the_project_installs_is_undecided(tmp_path, register, line):
    found = undecided(tmp_path, register)
    why = f"{VENDORED} may be the project's own module, put under that name at proj/m.py:{line}"
    assert found[READ] == why
    assert found["transformers.models.llama.LlamaModel"] == ""


@pytest.mark.parametrize(
    "register",
    [
        # a whole package: unsloth's stand-in for a trl that cannot be imported
        "import sys\ndef register():\n    sys.modules['transformers'] = object()\n",
        # a key bound twice: which name it is is not known
        (
            "import sys\ndef register(flag):\n    pkg = 'a.b'\n    if flag:\n"
            f"        pkg = '{VENDORED}'\n    sys.modules[pkg] = object()\n"
        ),
        f"def register(sys):\n    sys.modules.get('{VENDORED}')\n",  # a read installs nothing
    ],
)
def test_no_module_installed_under_a_known_submodule_decides_nothing(tmp_path, register):
    assert set(undecided(tmp_path, register).values()) == {""}


def test_a_name_each_function_binds_once_is_read_in_its_own_function(tmp_path):
    # unsloth's import_fixes: `name = "transformers.conversion_mapping"` in one stub's
    # installer, `name = "transformers.core_model_loading"` in the next
    register = (
        "import sys\n"
        "def _other():\n    name = 'transformers.utils.x'\n    sys.modules[name] = 1\n"
        f"def register():\n    name = '{VENDORED}'\n    if name:\n        sys.modules[name] = 2\n"
    )
    found = undecided(tmp_path, register)
    assert found[READ].endswith("put under that name at proj/m.py:9")
