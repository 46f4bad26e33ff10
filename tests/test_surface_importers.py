"""A project module's sites run only after an import of it ran: they take their importers'
conditions, on small project trees written here."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from test_surface_extract import one, surface

from canary.surface.model import Kind, Site

GEMMA4 = "transformers.models.gemma4"
PATCH = f"""\
    from {GEMMA4}.modeling_gemma4 import Gemma4Model
"""


LOADER = f"def load():\n    import {GEMMA4}\n    from proj import gemma4_patch\n"


def sites(tmp_path, **modules: str) -> tuple[Site, ...]:
    """The sites of the module-level import in ``proj/gemma4_patch.py`` (PATCH), with the
    other modules of ``proj`` given by name."""
    tree = {"__init__": "", "gemma4_patch": PATCH, **modules}
    refs = surface(tmp_path, {f"proj/{name}.py": text for name, text in tree.items()})
    return one(refs, Kind.IMPORT, f"{GEMMA4}.modeling_gemma4.Gemma4Model").sites


def test_a_module_imported_after_its_models_import_is_reached_only_after_it(tmp_path):
    loader = LOADER
    (site,) = sites(tmp_path, loader=loader)
    assert (site.at_import, site.after) == (True, (GEMMA4,))


def test_a_module_imported_under_a_version_test_takes_its_window(tmp_path):
    gated = """\
        import transformers
        from packaging import version

        if version.parse(transformers.__version__) >= version.parse("5.0.0"):
            from . import gemma4_patch
    """
    (site,) = sites(tmp_path, loader=gated)
    assert site.versions == (("transformers", ">=5.0.0"),)


def test_a_function_that_takes_only_a_helper_from_the_module_still_loads_it(tmp_path):
    # peft: `if is_transformers_ge_v5: from peft.utils.conversion import convert` in a
    # function that names nothing upstream itself; the import runs the module's top level
    flag = (
        "import transformers\nfrom packaging import version\n"
        'IS_V5 = version.parse(transformers.__version__) >= version.parse("5.0.0")\n'
    )
    user = """\
        import transformers
        from proj.flags import IS_V5

        def load(model):
            if IS_V5:
                from proj.gemma4_patch import convert
                convert(model)
    """
    patch = PATCH + "    def convert(model): ...\n"
    refs = surface(
        tmp_path,
        {
            "proj/__init__.py": "",
            "proj/flags.py": flag,
            "proj/gemma4_patch.py": patch,
            "proj/user.py": textwrap.dedent(user),
        },
    )
    (site,) = one(refs, Kind.IMPORT, f"{GEMMA4}.modeling_gemma4.Gemma4Model").sites
    assert site.versions == (("transformers", ">=5.0.0"),)


def test_an_import_for_type_checkers_only_is_no_way_in(tmp_path):
    # optimum-onnx's base.py imports model_patcher under `if TYPE_CHECKING:`
    gated = """\
        import transformers
        from packaging import version

        if version.parse(transformers.__version__) >= version.parse("5.0.0"):
            from . import gemma4_patch
    """
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import gemma4_patch\n"
    (site,) = sites(tmp_path, loader=gated, types=typed)
    assert site.versions == (("transformers", ">=5.0.0"),)


def test_one_import_under_no_condition_leaves_the_module_as_it_was(tmp_path):
    loader = LOADER
    plain = "from proj import gemma4_patch\n"  # names no upstream: read for its imports only
    assert [(s.after, s.versions) for s in sites(tmp_path, loader=loader, cli=plain)] == [((), ())]


def test_a_module_also_named_in_a_string_keeps_an_undecided_copy(tmp_path):
    loader = LOADER
    lazy = 'LAZY = {"gemma4": "proj.gemma4_patch"}\n'
    found = sites(tmp_path, loader=loader, lazy=lazy)
    assert {(s.after, bool(s.undecided)) for s in found} == {((), True), ((GEMMA4,), False)}


def test_a_module_imported_by_a_module_imported_under_a_window_takes_that_window(tmp_path):
    gated = """\
        import transformers
        from packaging import version

        if version.parse(transformers.__version__) < version.parse("5.0.0"):
            import proj.models
    """
    # proj/models.py imports the patch at its module level, with no condition of its own
    found = sites(tmp_path, loader=gated, models="from proj import gemma4_patch\n")
    assert [s.versions for s in found] == [(("transformers", "<5.0.0"),)]


def test_a_module_in_an_import_cycle_is_left_as_it_was(tmp_path):
    cycle = "from proj import gemma4_patch\n"
    patch_and_back = textwrap.dedent(PATCH) + "from proj import models\n"
    refs = surface(
        tmp_path,
        {
            "proj/__init__.py": "",
            "proj/gemma4_patch.py": patch_and_back,
            "proj/models.py": cycle,
            "proj/loader.py": LOADER.replace("gemma4_patch", "models"),
        },
    )
    (site,) = one(refs, Kind.IMPORT, f"{GEMMA4}.modeling_gemma4.Gemma4Model").sites
    assert site.after == ()


# peft: utils/save_and_load.py imports the v5 conversion module in a function, under a v5
# flag; that module imports save_and_load back at its top
CYCLE = {
    "proj/__init__.py": "",
    "proj/flags.py": (
        "import transformers\nfrom packaging import version\n"
        'IS_V5 = version.parse(transformers.__version__) >= version.parse("5.0.0")\n'
    ),
    "proj/conv.py": (
        "from transformers.conversion_mapping import get_model_conversion_mapping\n"
        "from proj import saver\n"
    ),
    "proj/saver.py": (
        "import transformers\nfrom proj.flags import IS_V5\n\n"
        "def save():\n    if IS_V5:\n        from proj import conv\n"
    ),
    "proj/main.py": "from proj import saver\n",
}
READ_CYCLE = """\
import sys
from pathlib import Path
from canary.surface.extract import extract
refs = extract(Path(sys.argv[1]), sorted(sys.argv[2:]), upstream=("transformers",))
print([(r.target, [s.versions for s in r.sites]) for r in refs if "conversion" in r.target])
"""


def test_an_import_cycle_reads_the_same_whatever_the_hash_seed(tmp_path):
    # which module of a cycle the reading met first decided where the others run, and that
    # order was a set's: two runs of one project could disagree
    for name, text in CYCLE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    read = [
        subprocess.run(
            [sys.executable, "-c", READ_CYCLE, str(tmp_path), *CYCLE],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(6)
    ]
    # the v5 module runs only where saver's function imports it: where the flag holds
    mapping = "transformers.conversion_mapping.get_model_conversion_mapping"
    assert set(read) == {f"[('{mapping}', [(('transformers', '>=5.0.0'),)])]\n"}, read


def test_a_site_in_a_function_of_the_module_takes_its_importers_conditions_too(tmp_path):
    patch = f"def patch():\n    from {GEMMA4}.modeling_gemma4 import Gemma4Model\n"
    refs = surface(
        tmp_path,
        {"proj/__init__.py": "", "proj/gemma4_patch.py": patch, "proj/loader.py": LOADER},
    )
    (site,) = one(refs, Kind.IMPORT, f"{GEMMA4}.modeling_gemma4.Gemma4Model").sites
    assert (site.at_import, site.after) == (False, (GEMMA4,))


OPTIONAL = (
    "def load():\n    try:\n        from proj.gemma4_patch import Gemma4Model\n"
    "        return Gemma4Model\n    except Exception:\n        return None\n"
)


def test_a_module_imported_only_where_a_handler_takes_its_place_breaks_nothing(tmp_path):
    # chattts: `try: from .cuda import TELlamaModel ... except Exception: warn` (the cuda
    # module's own transformers imports fail into that handler)
    (site,) = sites(tmp_path, loader=OPTIONAL)
    assert "proj.gemma4_patch is imported at proj/loader.py:3, where" in site.handled
    # also imported unguarded: that copy breaks
    found = sites(tmp_path, loader=OPTIONAL, plain="from proj import gemma4_patch\n")
    assert sorted(bool(s.handled) for s in found) == [False]  # the plain import: no way out


def test_a_package_imported_by_its_own_submodules_is_reached_only_through_its_importers(
    tmp_path,
):
    # chattts: cuda/__init__ imports .te_llama, which imports .patch (loading cuda again)
    files = {
        "proj/__init__.py": "",
        "proj/cuda/__init__.py": "from .te_llama import Gemma4Model\n",
        "proj/cuda/te_llama.py": PATCH.strip() + "\nfrom .patch import norm\n",
        "proj/cuda/patch.py": "norm = 1\n",
        "proj/loader.py": OPTIONAL.replace("proj.gemma4_patch", "proj.cuda"),
    }
    refs = surface(tmp_path, files)
    (site,) = one(refs, Kind.IMPORT, f"{GEMMA4}.modeling_gemma4.Gemma4Model").sites
    assert "proj.cuda is imported at proj/loader.py:3" in site.handled


def test_a_read_or_a_functions_import_in_such_a_module_still_raises_there(tmp_path):
    patch = f"import {GEMMA4}.modeling_gemma4 as m\nm.Gemma4Model\ndef f():\n    {PATCH.strip()}\n"
    refs = surface(
        tmp_path,
        {"proj/__init__.py": "", "proj/gemma4_patch.py": patch, "proj/loader.py": OPTIONAL},
    )
    read = one(refs, Kind.ATTRIBUTE, f"{GEMMA4}.modeling_gemma4.Gemma4Model")
    called = one(refs, Kind.IMPORT, f"{GEMMA4}.modeling_gemma4.Gemma4Model")
    assert [s.handled for s in (*read.sites, *called.sites)] == ["", ""]


@pytest.mark.parametrize(
    ("registry", "named"),
    [
        ('REGISTRY = {"gemma4": LazyImport("proj.gemma4_patch")}\n', "proj.gemma4_patch"),
        # mixturekit: its file read as a template, rewritten, written beside a checkpoint
        ('TEMPLATE = os.path.join(HERE, "gemma4_patch.py")\n', "gemma4_patch.py"),
        ("spec_from_file_location('g', 'proj/gemma4_patch.py')\n", "gemma4_patch.py"),
        # cache-dit: _safe_import(".glm_image", ...), an import_module relative to its package
        ('PLANNER = _safe_import(".gemma4_patch", "Planner")\n', "proj.gemma4_patch"),
    ],
)
def test_a_module_loaded_only_by_its_name_in_a_string_runs_where_canary_cannot_say(
    tmp_path, registry, named
):
    (site,) = sites(tmp_path, registry=registry)
    assert f"loaded by its name ({named!r})" in site.undecided


@pytest.mark.parametrize(
    "modules",
    [
        {"registry": 'NAME = "proj.gemma4_patch"\n', "cli": "import proj.gemma4_patch\n"},
        {"registry": 'FILE = "gemma4_patch.py"\n', "cli": "import proj.gemma4_patch\n"},
        {"registry": 'FILE = "other_gemma4_patch.py"\n'},  # another file's name
        {"registry": 'EXTENSION = ".gemma4_patch_json"\n'},  # relative, but no module
        {"cli": "from proj import gemma4_patch\n"},  # imported by a statement, named nowhere
        {},  # imported by its users only
    ],
)
def test_a_module_an_import_statement_loads_is_decided_as_before(tmp_path, modules):
    assert [s.undecided for s in sites(tmp_path, **modules)] == [""]


GATED_LAZY = """\
    import transformers
    from packaging import version

    if version.parse(transformers.__version__) >= version.parse("5.0.0"):
        from proj import lazy
"""


@pytest.mark.parametrize(
    "lazy",
    [
        # a package's lazy __getattr__ (arctic-platform's qwen35): it names nothing upstream,
        # so extraction does not walk it, and the import in it runs where its module does
        "def __getattr__(name):\n    from proj import gemma4_patch\n    return gemma4_patch\n",
        # a function that names upstream, walked: its import runs where its module does
        "import transformers\ndef load():\n    from proj import gemma4_patch\n",
    ],
)
def test_a_module_imported_in_a_function_takes_the_conditions_of_the_function_module(
    tmp_path, lazy
):
    (site,) = sites(tmp_path, loader=GATED_LAZY, lazy=lazy)
    assert site.versions == (("transformers", ">=5.0.0"),)


def test_a_module_imported_in_a_function_of_a_module_imported_anywhere_runs_anywhere(tmp_path):
    lazy = "def __getattr__(name):\n    from proj import gemma4_patch\n    return gemma4_patch\n"
    found = sites(tmp_path, loader=GATED_LAZY, lazy=lazy, user="from proj import lazy\n")
    assert [s.versions for s in found] == [()]
