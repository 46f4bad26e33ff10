"""The project's own version helpers, evaluated as called: a site under a helper's test, or
after a check that raises, runs only on the releases the helper admits (shapes from verl,
oumi and llamafactory); a look-alike the evaluator cannot read keeps every release."""

from __future__ import annotations

import pytest
from test_surface_guards import surface, windows

from canary.surface.model import Kind

QWEN = "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl"

COMPAT = """\
import importlib.metadata
from typing import Optional

from packaging import version


def is_transformers_version_in_range(
    min_version: Optional[str] = None, max_version: Optional[str] = None
) -> bool:
    try:
        transformers_version_str = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError as e:
        raise ModuleNotFoundError("The `transformers` package is not installed.") from e

    transformers_version = version.parse(transformers_version_str)

    lower_bound_check = True
    if min_version is not None:
        lower_bound_check = version.parse(min_version) <= transformers_version

    upper_bound_check = True
    if max_version is not None:
        upper_bound_check = transformers_version <= version.parse(max_version)

    return lower_bound_check and upper_bound_check


def is_new(text):
    return text.startswith("5")
"""


def test_a_range_helper_followed_across_modules_gates_both_branches_verl_style(tmp_path):
    refs = surface(
        tmp_path,
        {
            "vp/__init__.py": "",
            "vp/compat.py": COMPAT,
            "vp/patch.py": f"""\
                from vp.compat import is_transformers_version_in_range

                def apply():
                    if is_transformers_version_in_range(min_version="4.54.0"):
                        from {QWEN} import Qwen2_5_VLAttention
                    else:
                        from {QWEN} import Qwen2_5_VLFlashAttention2
                    if not is_transformers_version_in_range(max_version="4.47.1"):
                        return
                    from {QWEN} import OldThing
            """,
        },
    )
    assert windows(refs, Kind.IMPORT, f"{QWEN}.Qwen2_5_VLAttention") == [
        {"transformers": ">=4.54.0"}
    ]
    assert windows(refs, Kind.IMPORT, f"{QWEN}.Qwen2_5_VLFlashAttention2") == [
        {"transformers": "<4.54.0"}
    ]
    assert windows(refs, Kind.IMPORT, f"{QWEN}.OldThing") == [{"transformers": "<=4.47.1"}]


def test_a_helper_that_imports_what_it_compares_gates_its_branch(tmp_path):
    # auto-round's is_transformers_version_greater_or_equal_5: both imports in the body
    helper = """\
        from functools import lru_cache

        @lru_cache(None)
        def is_v5():
            import transformers
            from packaging import version

            return version.parse(transformers.__version__) >= version.parse("5.0.0")
    """
    patch = f"from vp.common import is_v5\nif is_v5():\n    from {QWEN} import New\n"
    files = {"vp/__init__.py": "", "vp/common.py": helper, "vp/patch.py": patch}
    assert windows(surface(tmp_path, files), Kind.IMPORT, f"{QWEN}.New") == [
        {"transformers": ">=5.0.0"}
    ]


def test_a_helper_it_cannot_read_keeps_every_release(tmp_path):
    refs = surface(
        tmp_path,
        {
            "vp/__init__.py": "",
            "vp/compat.py": COMPAT,
            "vp/patch.py": f"""\
                import transformers
                from vp.compat import is_new, is_transformers_version_in_range

                def apply(low):
                    if is_new(transformers.__version__):
                        from {QWEN} import A
                    if is_transformers_version_in_range(min_version=low):
                        from {QWEN} import B
                    if is_transformers_version_in_range("4.50", max_version="5.0"):
                        pass
                    else:
                        from {QWEN} import C
            """,
        },
    )
    assert windows(refs, Kind.IMPORT, f"{QWEN}.A") == [{}]  # no version comparison
    assert windows(refs, Kind.IMPORT, f"{QWEN}.B") == [{}]  # the bound is not literal
    # outside >=4.50,<=5.0 is two windows, not one: every release
    assert windows(refs, Kind.IMPORT, f"{QWEN}.C") == [{}]


def test_a_one_line_helper_oumi_style(tmp_path):
    refs = surface(
        tmp_path,
        {
            "ou/__init__.py": "",
            "ou/utils.py": """\
                import functools
                import trl
                from packaging import version

                @functools.cache
                def is_trl_v0_28_or_later() -> bool:
                    return version.parse(trl.__version__) >= version.parse("0.28.0")
            """,
            "ou/train.py": """\
                from ou.utils import is_trl_v0_28_or_later

                def build():
                    if is_trl_v0_28_or_later():
                        from trl import NewConfig
                    else:
                        from trl.trainer import OldConfig
            """,
        },
    )
    assert windows(refs, Kind.IMPORT, "trl.NewConfig") == [{"trl": ">=0.28.0"}]
    assert windows(refs, Kind.IMPORT, "trl.trainer.OldConfig") == [{"trl": "<0.28.0"}]


CHECK = """\
import os

from transformers.utils.versions import require_version


def check_version(requirement: str, mandatory: bool = False) -> None:
    if os.getenv("DISABLE_VERSION_CHECK", "0") == "1" and not mandatory:
        return
    hint = "pip install " + requirement
    require_version(requirement, hint)
"""


def test_a_mandatory_check_that_raises_gates_what_follows_llamafactory_style(tmp_path):
    refs = surface(
        tmp_path,
        {
            "lf/__init__.py": "",
            "lf/misc.py": CHECK,
            "lf/longlora.py": """\
                from lf.misc import check_version

                def apply():
                    check_version("transformers>=4.41.2,<4.48.0", mandatory=True)
                    from transformers.models.llama.modeling_llama import LlamaFlashAttention2

                def optional():
                    check_version("transformers>=4.41.2,<4.48.0")
                    from transformers.models.llama.modeling_llama import LlamaSdpaAttention
            """,
        },
    )
    llama = "transformers.models.llama.modeling_llama"
    assert windows(refs, Kind.IMPORT, f"{llama}.LlamaFlashAttention2") == [
        {"transformers": "<4.48.0,>=4.41.2"}
    ]
    # Not mandatory: DISABLE_VERSION_CHECK=1 skips the check, so it runs everywhere.
    assert windows(refs, Kind.IMPORT, f"{llama}.LlamaSdpaAttention") == [{}]


def test_an_early_return_inside_a_try_whose_handlers_leave_gates_what_follows_unsloth_style(
    tmp_path,
):
    refs = surface(
        tmp_path,
        {
            "uz/__init__.py": "",
            "uz/patches.py": """\
                def shim():
                    try:
                        import transformers
                        from packaging.version import Version
                        if Version(transformers.__version__) < Version("5.0.0"):
                            return
                    except Exception:
                        return
                    from transformers.models.llama import modeling_llama
                    modeling_llama.LlamaShim = 1

                def goes_on():
                    try:
                        import transformers
                        from packaging.version import Version
                        if Version(transformers.__version__) < Version("5.0.0"):
                            return
                    except Exception:
                        pass  # a test that raised lets what follows run anywhere
                    from transformers.models.llama import modeling_llama
                    modeling_llama.LlamaOther = 1
            """,
        },
    )
    llama = "transformers.models.llama.modeling_llama"
    assert windows(refs, Kind.PATCH, f"{llama}.LlamaShim") == [{"transformers": ">=5.0.0"}]
    assert windows(refs, Kind.PATCH, f"{llama}.LlamaOther") == [{}]


def test_a_version_helper_it_cannot_read_makes_its_sites_undecided(tmp_path):
    refs = surface(
        tmp_path,
        {
            "vp/__init__.py": "",
            "vp/compat.py": COMPAT,
            "vp/patch.py": f"""\
                import transformers
                from vp.compat import is_new, is_transformers_version_in_range

                def apply(low):
                    if is_transformers_version_in_range(min_version=low):
                        from {QWEN} import B
                    if is_transformers_version_in_range(min_version="4.54.0"):
                        from {QWEN} import D
                    if is_new(transformers.__version__):
                        from {QWEN} import A
            """,
        },
    )

    def undecided(name: str) -> str:
        (found,) = [r for r in refs if r.target == f"{QWEN}.{name}"]
        return found.sites[0].undecided

    assert "is_transformers_version_in_range(min_version=low)" in undecided("B")
    assert undecided("D") == ""  # read: a window, decided
    assert undecided("A") == ""  # no version helper by name: the site runs, as before


# trl 0.7's import_utils, kept by forks (trl-fpo 0.0.15): named for no version, it compares
# the installed version's text, so "4.100" < "4.33"; modeling_base.py imports by its answer.
GREATER_THAN = """\
import sys
from importlib.metadata import version

def is_transformers_greater_than(current_version):
    if sys.version_info >= (3, 8):
        _transformers_version = version("transformers")
    else:
        import pkg_resources
        _transformers_version = pkg_resources.get_distribution("transformers").version
    return _transformers_version > current_version

def is_parsed_greater_than(current_version):
    from packaging.version import parse
    return parse(version("transformers")) > parse(current_version)

def is_debug():
    import os
    return os.environ.get("DEBUG") == "1"
"""


@pytest.mark.parametrize(
    ("test", "why"),
    [
        (
            'is_transformers_greater_than("4.33.0")',
            "compares transformers's installed version as text",
        ),
        ("is_parsed_greater_than(low)", "with an unread value"),  # read, but not the bound
        ('is_parsed_greater_than("4.33.0")', ""),  # a window: decided
        ("is_debug()", ""),  # compares no version: the site runs, as before
    ],
)
def test_a_helper_seen_comparing_an_installed_version_it_cannot_read_leaves_sites_undecided(
    tmp_path, test, why
):
    user = (
        "from vp.compat import *\n"
        f"def apply(low):\n    if {test}:\n        from {QWEN} import A\n"
        f"    else:\n        from {QWEN} import B\n"
    )
    refs = surface(tmp_path, {"vp/__init__.py": "", "vp/compat.py": GREATER_THAN, "vp/m.py": user})
    for name in ("A", "B"):  # the branch it takes and the other: neither is decided
        (found,) = [r for r in refs if r.target == f"{QWEN}.{name}"]
        (site,) = found.sites
        assert (why in site.undecided) if why else site.undecided == ""


def test_a_name_bound_under_a_version_test_carries_its_window_to_later_uses(tmp_path):
    refs = surface(
        tmp_path,
        {
            "sw/__init__.py": "",
            "sw/cpo.py": """\
                import trl
                from packaging import version

                if version.parse(trl.__version__) >= version.parse("0.29"):
                    from trl.experimental.cpo import CPOTrainer as HFCPOTrainer
                else:
                    from trl import CPOTrainer as HFCPOTrainer

                HFCPOTrainer.__init__ = None
            """,
            "sw/orpo.py": """\
                from trl import ORPOTrainer as HFORPOTrainer

                HFORPOTrainer.__init__ = None
            """,
            "sw/use.py": """\
                from sw.cpo import HFCPOTrainer

                def make():
                    return HFCPOTrainer.compute_loss
            """,
        },
    )
    assert windows(refs, Kind.PATCH, "trl.CPOTrainer.__init__") == [{"trl": "<0.29"}]
    assert windows(refs, Kind.ATTRIBUTE, "trl.CPOTrainer.compute_loss") == [{"trl": "<0.29"}]
    # bound on every release: its use runs on every release
    assert windows(refs, Kind.PATCH, "trl.ORPOTrainer.__init__") == [{}]


def test_a_helper_returning_the_installed_version_compares_as_it_llamafactory_style(tmp_path):
    refs = surface(
        tmp_path,
        {
            "lf/__init__.py": "",
            "lf/packages.py": """\
                import importlib.metadata
                from functools import lru_cache

                from packaging import version

                def _get_package_version(name):
                    try:
                        return version.parse(importlib.metadata.version(name))
                    except Exception:
                        return version.parse("0.0.0")

                def _first_line(name):
                    return name.splitlines()[0]

                @lru_cache
                def is_transformers_version_greater_than(content):
                    return _get_package_version("transformers") >= version.parse(content)

                def is_new(content):
                    return version.parse(_first_line("transformers")) >= version.parse(content)
            """,
            "lf/longlora.py": f"""\
                from lf.packages import is_new, is_transformers_version_greater_than

                if not is_transformers_version_greater_than("4.48.0"):
                    from {QWEN} import A
                if is_new("4.48.0"):
                    from {QWEN} import B
            """,
        },
    )
    assert windows(refs, Kind.IMPORT, f"{QWEN}.A") == [{"transformers": "<4.48.0"}]
    # a function of a text, not an installed version: every release
    assert windows(refs, Kind.IMPORT, f"{QWEN}.B") == [{}]


def test_a_check_whose_only_handler_is_for_a_missing_package_oumi_style(tmp_path):
    refs = surface(
        tmp_path,
        {
            "ou/__init__.py": "",
            "ou/packaging.py": """\
                import importlib.metadata
                from packaging import version

                _MIN = "0.24.0"

                def is_gold_available():
                    try:
                        trl_version = importlib.metadata.version("trl")
                        return version.parse(trl_version) >= version.parse(_MIN)
                    except importlib.metadata.PackageNotFoundError:
                        return False

                def is_other_available():
                    try:
                        trl_version = importlib.metadata.version("trl")
                        return version.parse(trl_version) >= version.parse(_MIN)
                    except Exception:
                        return False

                def require_gold(feature="GOLD"):
                    if not is_gold_available():
                        raise ImportError(feature + " needs a newer trl")
            """,
            "ou/train.py": """\
                from ou.packaging import is_other_available, require_gold

                def build():
                    require_gold()
                    from trl.experimental.gold import GOLDTrainer
                    return GOLDTrainer

                def other():
                    if is_other_available():
                        from trl.experimental.gold import GOLDConfig
                        return GOLDConfig
            """,
        },
    )
    assert windows(refs, Kind.IMPORT, "trl.experimental.gold.GOLDTrainer") == [{"trl": ">=0.24.0"}]
    # a handler for any Exception may be taken on an installed release: not read
    assert windows(refs, Kind.IMPORT, "trl.experimental.gold.GOLDConfig") == [{}]


@pytest.mark.parametrize(
    ("tried", "handler", "undecided"),
    [
        # optimum-intel: reading an upstream package's version never raises
        # PackageNotFoundError on a release checked: the flag stays True
        ("md.version('transformers')", "md.PackageNotFoundError", False),
        # a handler that may be taken: the flag is one of two values, no constant
        ("compute()", "Exception", True),
    ],
)
def test_a_flag_a_handler_sets_is_a_constant_only_where_the_handler_is_never_taken(
    tmp_path, tried, handler, undecided
):
    helper = (
        "import importlib.util\nimport importlib.metadata as md\n"
        "_available = importlib.util.find_spec('transformers') is not None\n"
        "if _available:\n"
        "    try:\n"
        f"        _v = {tried}\n"
        f"    except {handler}:\n"
        "        _available = False\n"
        "def is_v5():\n"
        "    if _available == False:\n"
        "        return False\n"
        "    return True\n"
    )
    user = "from proj.h import is_v5\nif is_v5():\n    from transformers.integrations import moe\n"
    refs = surface(tmp_path, {"proj/__init__.py": "", "proj/h.py": helper, "proj/m.py": user})
    (site,) = next(r for r in refs if r.target == "transformers.integrations.moe").sites
    assert bool(site.undecided) is undecided


OPTIMUM_HELPERS = """\
import importlib.util
import operator as op
import importlib.metadata as importlib_metadata
from packaging.version import parse

STR_OPERATION_TO_FUNC = {">": op.gt, ">=": op.ge, "==": op.eq, "!=": op.ne, "<=": op.le, "<": op.lt}
_transformers_available = importlib.util.find_spec("transformers") is not None
_transformers_version = "N/A"
if _transformers_available:
    try:
        _transformers_version = importlib_metadata.version("transformers")
    except importlib_metadata.PackageNotFoundError:
        _transformers_available = False

def compare_versions(library_or_version, operation, requirement_version):
    if operation not in STR_OPERATION_TO_FUNC.keys():
        raise ValueError(operation)
    operation = STR_OPERATION_TO_FUNC[operation]
    if isinstance(library_or_version, str):
        library_or_version = parse(importlib_metadata.version(library_or_version))
    return operation(library_or_version, parse(requirement_version))

def is_transformers_version(operation, version):
    if not _transformers_available:
        return False
    return compare_versions(parse(parse(_transformers_version).base_version), operation, version)
"""


def test_an_optimum_style_helper_is_evaluated_through_its_operator_table(tmp_path):
    user = (
        "from proj.utils import is_transformers_version\n"
        "if is_transformers_version('>=', '4.57'):\n"
        "    from transformers.models.qwen3_vl import Qwen3VLModel\n"
        "def patch():\n"
        "    if is_transformers_version('<', '5'):\n"
        "        return\n"
        "    else:\n"
        "        from transformers.integrations import moe\n"
    )
    refs = surface(
        tmp_path, {"proj/__init__.py": "", "proj/utils.py": OPTIMUM_HELPERS, "proj/m.py": user}
    )
    assert windows(refs, Kind.IMPORT, "transformers.models.qwen3_vl.Qwen3VLModel") == [
        {"transformers": ">=4.57"}
    ]
    assert windows(refs, Kind.IMPORT, "transformers.integrations.moe") == [{"transformers": ">=5"}]


def test_a_helper_given_the_package_name_reads_its_installed_version_accelerate_style(tmp_path):
    # accelerate's compare_versions("transformers", "<", "4.46"): a package's name, and a
    # table of comparisons imported from another module
    user = (
        "from proj.versions import compare_versions\n"
        "def setup():\n"
        "    if compare_versions('transformers', '<', '4.46'):\n"
        "        from transformers.deepspeed import HfDeepSpeedConfig\n"
        "    else:\n"
        "        from transformers.integrations import HfDeepSpeedConfig\n"
    )
    files = {
        "proj/__init__.py": "",
        "proj/constants.py": "import operator as op\nOPS = {'>=': op.ge, '<': op.lt}\n",
        "proj/versions.py": """\
            import importlib.metadata
            from packaging.version import parse

            from .constants import OPS as STR_OPERATION_TO_FUNC

            def compare_versions(library_or_version, operation, requirement_version):
                if operation not in STR_OPERATION_TO_FUNC.keys():
                    raise ValueError(operation)
                operation = STR_OPERATION_TO_FUNC[operation]
                if isinstance(library_or_version, str):
                    library_or_version = parse(importlib.metadata.version(library_or_version))
                return operation(library_or_version, parse(requirement_version))
            """,
    }
    refs = surface(tmp_path, {**files, "proj/m.py": user})
    old, new = "transformers.deepspeed", "transformers.integrations"
    assert windows(refs, Kind.IMPORT, f"{old}.HfDeepSpeedConfig") == [{"transformers": "<4.46"}]
    assert windows(refs, Kind.IMPORT, f"{new}.HfDeepSpeedConfig") == [{"transformers": ">=4.46"}]


@pytest.mark.parametrize(
    ("test", "undecided"),
    [
        ("is_transformers_version('>=', '4.53')", True),  # optimum's, read by optimum-onnx
        ("check_min_version('transformers>=4.53')", True),  # an upstream named as an argument
        ("is_torch_version('>=', '2.1')", False),  # another package's version: all releases
        ("is_available('transformers')", False),  # named for no version
    ],
)
def test_another_packages_version_test_of_upstream_leaves_its_branch_undecided(
    tmp_path, test, undecided
):
    helper = test.split("(")[0]
    user = (
        f"from optimum.utils import {helper}\n"
        f"if {test}:\n    from transformers.masking_utils import sdpa_mask\n"
    )
    refs = surface(tmp_path, {"vp/__init__.py": "", "vp/m.py": user})
    (found,) = [r for r in refs if r.target.endswith("sdpa_mask")]
    assert [bool(s.undecided) for s in found.sites] == [undecided]


def test_a_version_compared_as_text_leaves_its_branch_and_imported_modules_undecided(tmp_path):
    # ipex-llm's utils/__init__.py picks a module by `trans_version >= "4.47.0"`
    for test in ("v >= '4.47.0'", "'4.47.0' <= v"):  # the operands swapped: the same test
        files = {
            "vp/__init__.py": "",
            "vp/pick.py": f"import transformers\nv = transformers.__version__\nif {test}:\n"
            "    import vp.new\n",
            "vp/new.py": f"from {QWEN} import New\n",
        }
        (found,) = [r for r in surface(tmp_path, files) if r.target == f"{QWEN}.New"]
        assert [("compared as text" in s.undecided) for s in found.sites] == [True]


def test_a_check_that_cannot_raise_leaves_what_follows_decided(tmp_path):
    # unsloth's check_transformers_dependency_versions() only warns
    check = "def check_versions():\n    try:\n        x()\n    except Exception:\n        return\n"
    for body, undecided in ((check, False), (check + "    raise ValueError\n", True)):
        module = f"{body}check_versions()\nfrom {QWEN} import After\n"
        refs = surface(tmp_path, {"vp/__init__.py": "", "vp/m.py": module})
        (found,) = [r for r in refs if r.target == f"{QWEN}.After"]
        assert [bool(s.undecided) for s in found.sites] == [undecided]
