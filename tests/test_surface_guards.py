"""Version windows: which releases a site can run on, read from the version tests of the
branches around it, on small project trees written here (shapes taken from liger-kernel,
unsloth and unsloth_zoo)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from canary.surface import guards
from canary.surface.extract import extract
from canary.surface.model import Kind, Reference, Site

UPSTREAM = ("transformers", "trl", "peft")
MIXTRAL = "transformers.models.mixtral.modeling_mixtral"


def surface(
    tmp_path: Path, files: dict[str, str], parsers: tuple[str, ...] = ()
) -> tuple[Reference, ...]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return extract(tmp_path, sorted(files), upstream=UPSTREAM, version_parsers=parsers)


def windows(references, kind: Kind, target: str) -> list[dict[str, str]]:
    (found,) = [r for r in references if r.kind is kind and r.target == target]
    return [dict(site.versions) for site in found.sites]


def test_a_module_constant_gates_both_branches_liger_style(tmp_path):
    refs = surface(
        tmp_path,
        {
            "lk/__init__.py": "",
            "lk/monkey_patch.py": """\
                import transformers
                from packaging import version
                from transformers.models.mixtral import modeling_mixtral

                IS_TRANSFORMERS_V5_OR_LATER = version.parse(
                    transformers.__version__
                ) >= version.parse("5.0.0")

                def apply(swiglu=True):
                    if swiglu:
                        if IS_TRANSFORMERS_V5_OR_LATER:
                            modeling_mixtral.MixtralExperts = object
                        else:
                            modeling_mixtral.MixtralBlockSparseTop2MLP = object
                    modeling_mixtral.MixtralRMSNorm = object
            """,
        },
    )
    assert windows(refs, Kind.PATCH, f"{MIXTRAL}.MixtralExperts") == [{"transformers": ">=5.0.0"}]
    assert windows(refs, Kind.PATCH, f"{MIXTRAL}.MixtralBlockSparseTop2MLP") == [
        {"transformers": "<5.0.0"}
    ]
    assert windows(refs, Kind.PATCH, f"{MIXTRAL}.MixtralRMSNorm") == [{}]  # after the if


def test_a_constant_imported_from_another_project_module_gates_too(tmp_path):
    refs = surface(
        tmp_path,
        {
            "proj/__init__.py": "",
            "proj/versions.py": """\
                from importlib.metadata import version as importlib_version
                from packaging.version import Version

                transformers_version = Version(importlib_version("transformers"))
                trl_version = Version(importlib_version("trl"))
            """,
            "proj/patch.py": """\
                import transformers.trainer as trainer
                from .versions import transformers_version, trl_version
                from packaging.version import Version

                def patch():
                    if transformers_version < Version("4.50.0.dev0"):
                        trainer.Trainer.old_hook = None
                    if not trl_version >= Version("0.18.0"):
                        return
                    trainer.Trainer.new_hook = None
            """,
        },
    )
    trainer = "transformers.trainer.Trainer"
    assert windows(refs, Kind.PATCH, f"{trainer}.old_hook") == [{"transformers": "<4.50.0.dev0"}]
    # after `if not x: return`, the rest of the function runs only where x held
    assert windows(refs, Kind.PATCH, f"{trainer}.new_hook") == [{"trl": ">=0.18.0"}]


def test_nested_tests_conjoin_and_elif_negates_what_came_before(tmp_path):
    refs = surface(
        tmp_path,
        {
            "proj/__init__.py": "",
            "proj/a.py": """\
                import importlib.metadata
                import transformers.trainer as t
                from packaging.version import Version

                V = Version(importlib.metadata.version("transformers"))

                def f(flag):
                    if V >= Version("4.50"):
                        if Version("5.0") > V:
                            t.A = 1
                    elif V >= Version("4.40"):
                        t.B = 1
                    else:
                        t.C = 1
                    x = t.D if V.major >= 5 else t.E
                    if V >= Version("4.50") and flag:
                        t.F = 1
                    else:
                        t.G = 1  # flag false or older: no single window
            """,
        },
    )
    trainer = "transformers.trainer"
    assert windows(refs, Kind.PATCH, f"{trainer}.A") == [{"transformers": "<5.0,>=4.50"}]
    assert windows(refs, Kind.PATCH, f"{trainer}.B") == [{"transformers": "<4.50,>=4.40"}]
    assert windows(refs, Kind.PATCH, f"{trainer}.C") == [{"transformers": "<4.40,<4.50"}]
    assert windows(refs, Kind.ATTRIBUTE, f"{trainer}.D") == [{"transformers": ">=5.dev0"}]
    assert windows(refs, Kind.ATTRIBUTE, f"{trainer}.E") == [{"transformers": "<5.dev0"}]
    assert windows(refs, Kind.PATCH, f"{trainer}.F") == [{"transformers": ">=4.50"}]
    assert windows(refs, Kind.PATCH, f"{trainer}.G") == [{}]


@pytest.mark.parametrize(
    ("spelling", "window"),
    [
        ('importlib.metadata.version("transformers")', {"transformers": ">=4.50"}),
        ('pkg_resources.get_distribution("transformers").version', {"transformers": ">=4.50"}),
        ('importlib.metadata.distribution("transformers").version', {"transformers": ">=4.50"}),
        ('pkg_resources.get_distribution("torch").version', {}),  # not upstream's
        ('pkg_resources.get_distribution("transformers").location', {}),  # no version
    ],
)
def test_each_spelling_of_the_installed_version_is_read(tmp_path, spelling, window):
    source = (
        "import importlib.metadata\nimport pkg_resources\nimport transformers.trainer as t\n"
        f"from packaging.version import Version\nif Version({spelling}) >= Version('4.50'):\n"
        "    t.A = 1\n"
    )
    refs = surface(tmp_path, {"proj/__init__.py": "", "proj/a.py": source})
    assert windows(refs, Kind.PATCH, "transformers.trainer.A") == [window]


def test_the_major_number_of_the_installed_text_is_read_as_a_window(tmp_path):
    # granite-tsfm: major = int(transformers.__version__.split(".")[0]); if major >= 5: ...
    source = """\
        import transformers
        import transformers.trainer as t

        major = int(transformers.__version__.split(".")[0])
        if major >= 5:
            t.A = 1
        else:
            t.B = 1
        if int(transformers.__version__.split(".")[1]) >= 5:
            t.C = 1  # the minor number alone: no window
    """
    refs = surface(tmp_path, {"proj/__init__.py": "", "proj/a.py": source})
    assert windows(refs, Kind.PATCH, "transformers.trainer.A") == [{"transformers": ">=5.dev0"}]
    assert windows(refs, Kind.PATCH, "transformers.trainer.B") == [{"transformers": "<5.dev0"}]
    assert windows(refs, Kind.PATCH, "transformers.trainer.C") == [{}]


@pytest.mark.parametrize(
    ("test", "window"),
    [
        # transformers-stream-generator's spelling: the first two numbers, by regex
        (
            r'tuple(int(x) for x in re.findall(r"\d+", transformers.__version__)[:2]) < (4, 41)',
            "<4.41.dev0",
        ),
        ('tuple(map(int, transformers.__version__.split(".")[:2])) >= (4, 36)', ">=4.36.dev0"),
        (
            'tuple(int(x) for x in transformers.__version__.split("+")[0].split(".")[:2])'
            " <= (4, 41)",
            "<4.42.dev0",
        ),
        ("Version(transformers.__version__).release >= (4, 56, 0)", ">=4.56.0.dev0"),
        ('Version(transformers.__version__).release < Version("5.0.0").release', "<5.0.0.dev0"),
        ("Version(transformers.__version__).release[:2] == (5, 2)", "<5.3.dev0,>=5.2.dev0"),
        ("(4, 41) > TV", "<4.41.dev0"),  # a name bound to the tuple, either side
        ("TV > (4,)", ">=4.dev0"),  # the literal shorter: (4, 0) > (4,) holds
        ("TV >= (4, 41, 2)", ">=4.42.dev0"),  # the literal longer: (4, 41) < (4, 41, 2)
        ("(major, minor) < (5, 5)", "<5.5.dev0"),  # names unpacked from the numbers
    ],
)
def test_the_installed_release_as_a_tuple_is_read_as_a_window(tmp_path, test, window):
    assert release_tuple_window(tmp_path, test) == [{"transformers": window}]


@pytest.mark.parametrize(
    "test",
    [
        # all numbers: <= and > depend on how many a release has
        "Version(transformers.__version__).release <= (4, 56, 0)",
        "TV == (4,)",  # the literal shorter: never equal
        "(minor, major) < (5, 5)",  # not in order
        "tuple(int(x) for x in transformers.__version__.split('.')[1:3]) >= (4, 1)",
        "tuple(int(x) for x in transformers.__version__.split('-')[:2]) >= (4, 1)",
        "tuple(float(x) for x in transformers.__version__.split('.')[:2]) >= (4, 1)",
        "tuple(map(int, torch.__version__.split('.')[:2])) >= (2, 4)",  # not upstream
        "TV >= [4, 41]",  # a tuple against a list raises
        "TV >= (4, True)",
    ],
)
def test_release_tuples_that_cannot_be_read_exactly_give_no_window(tmp_path, test):
    assert release_tuple_window(tmp_path, test) == [{}], test


def release_tuple_window(tmp_path, test: str) -> list[dict[str, str]]:
    """The window of a patch under ``if <test>:``, beside a name bound to the installed
    release's first two numbers (TV) and the two unpacked (major, minor)."""
    source = f"""\
        import re
        import torch
        import transformers
        import transformers.trainer as t
        from packaging.version import Version

        TV = tuple(map(int, transformers.__version__.split(".")[:2]))
        major, minor = (int(x) for x in transformers.__version__.split(".")[:2])

        def f():
            if {test}:
                t.A = 1
    """
    refs = surface(tmp_path, {"proj/__init__.py": "", "proj/a.py": source})
    return windows(refs, Kind.PATCH, "transformers.trainer.A")


@pytest.mark.parametrize(
    "test",
    [
        'transformers.__version__ >= "5.0.0"',  # strings: "10.0" < "5.0", no release order
        'Version(transformers.__version__) >= "5.0.0"',  # raises TypeError
        'Version(torch.__version__) >= Version("2.4")',  # not a package canary checks
        "Version(transformers.__version__) >= Version(minimum())",  # not literal
        "_transformers_version_ok()",  # a project helper: not read
        # the project's own wrapper (unsloth's reads "5.0.0.dev0" as 5.0.0.1): not packaging
        'own.Version(transformers.__version__) >= own.Version("5.0.0")',
        'OwnVersion(transformers.__version__) >= OwnVersion("5.0.0")',
        'version.parse(transformers.__version__) in SpecifierSet(">=5")',
        'Version("4.0") <= Version(transformers.__version__) < Version("5.0")',  # chained
    ],
)
def test_tests_that_cannot_be_read_exactly_give_no_window(tmp_path, test):
    refs = surface(
        tmp_path,
        {
            "proj/__init__.py": "",
            "proj/own.py": "def Version(text):\n    return text\n",
            "proj/a.py": f"""\
                import torch
                import transformers
                import transformers.trainer as t
                from proj import own
                from proj.own import Version as OwnVersion
                from packaging import version
                from packaging.version import Version

                def f():
                    if {test}:
                        t.A = 1
                    else:
                        t.B = 1
            """,
        },
    )
    for name in ("A", "B"):
        assert windows(refs, Kind.PATCH, f"transformers.trainer.{name}") == [{}], test


class Names:
    """V is transformers' installed version, parsed; Version is packaging's."""

    def version_of(self, node: ast.expr):
        if isinstance(node, ast.Name) and node.id == "V":
            return guards.InstalledVersion("transformers", parsed=True)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return None

    def version_parser(self, func: ast.expr) -> str | None:
        if isinstance(func, ast.Name) and func.id in ("Version", "Own"):
            return "packaging.version.Version" if func.id == "Version" else "mypkg.Own"
        return None

    def call_gate(self, node: ast.Call):
        return None


def test_a_window_is_never_narrower_than_where_the_branch_runs():
    def window(text: str, positive: bool = True) -> dict[str, str] | None:
        test = ast.parse(text, mode="eval").body
        found = guards.version_window(test, Names(), positive=positive)
        return None if found is None else dict(found.specifiers())

    # a and b holds: both hold (an unreadable part narrows nothing); it fails: either may
    assert window('V >= Version("5") and x') == {"transformers": ">=5"}
    assert window('V >= Version("5") and x', positive=False) is None
    assert window('not (V < Version("5") or x)') == {"transformers": ">=5"}
    assert window('V == Version("5.1")', positive=False) == {"transformers": "!=5.1"}
    assert window("V.major != 4") is None


@pytest.mark.parametrize(
    ("window", "release", "runs"),
    [
        ((("transformers", ">=5.0.0"),), "4.57.6", False),
        ((("transformers", ">=5.0.0"),), "5.0.0", True),
        ((("transformers", "<5.dev0"),), "5.0.0", False),
        ((("transformers", "<4.50.0.dev0"),), "4.50.0", False),
        ((("transformers", "<4.50.0.dev0"),), "4.49.0", True),
        ((("transformers", ">=4.40,<4.50"),), "4.45.0", True),
        ((("transformers", ">=4.40,<4.50"),), "4.50.0", False),
        ((("transformers", "<5.0.0"),), "main", True),  # main's version is not known here
        ((("trl", "<1.0"),), "5.0.0", True),  # another package's window says nothing
        ((), "1.0", True),
    ],
)
def test_a_site_runs_where_its_window_holds_compared_as_the_project_compares(window, release, runs):
    assert Site("a.py", 1, versions=window).runs_on("transformers", release) is runs


# unsloth_zoo's Version, in short: a package name is its installed version; a version with
# a suffix is read as its release plus ".1" ("4.50.0.dev0" -> 4.50.0.1).
OWN_VERSION = "def Version(version):\n    return version\n"


@pytest.mark.parametrize(
    ("imports", "parsers"),
    [
        # the project's own wrapper, imported from its module or through a re-export
        ("from proj.utils import Version", ("proj.utils.Version",)),
        ("from proj import Version", ("proj.utils.Version",)),
        # another package's (unsloth imports unsloth_zoo's), by name or through its module
        ("from zoo.utils import Version", ("zoo.utils.Version",)),
        ("import zoo.utils as u; Version = u.Version", ("zoo.utils.Version",)),
    ],
)
def test_a_declared_parser_gives_windows_as_packaging_does(tmp_path, imports, parsers):
    files = {
        "proj/__init__.py": "from proj.utils import Version\n",
        "proj/utils.py": OWN_VERSION,
        "proj/a.py": f"""\
            import transformers
            import transformers.trainer as t
            from importlib.metadata import version as importlib_version
            {imports}

            def f():
                if Version(importlib_version("transformers")) < Version("5.0.0"):
                    return
                t.A = 1
                if Version(transformers.__version__) >= Version("4.50"):
                    t.B = 1
        """,
    }
    refs = surface(tmp_path, files, parsers)
    assert windows(refs, Kind.PATCH, "transformers.trainer.A") == [{"transformers": ">=5.0.0"}]
    assert windows(refs, Kind.PATCH, "transformers.trainer.B") == [
        {"transformers": ">=4.50,>=5.0.0"}
    ]
    assert [s.undecided for r in refs if r.kind is Kind.PATCH for s in r.sites] == ["", ""]
    # undeclared, the same wrapper orders nothing canary trusts: every release
    refs = surface(tmp_path, files)
    assert windows(refs, Kind.PATCH, "transformers.trainer.A") == [{}]


@pytest.mark.parametrize("literal", ["5.0.0.dev0", "5.0.0rc1", "5.0.0.post1", "5.0.0+cu121", "v5"])
def test_a_declared_parser_is_trusted_with_plain_release_numbers_only(tmp_path, literal):
    # unsloth's wrapper reads "5.0.0.dev0" as 5.0.0.1, above 5.0.0 where packaging puts it
    # below: read as packaging reads it, the else branch would be said not to run on 5.0.0
    files = {
        "proj/__init__.py": "",
        "proj/utils.py": OWN_VERSION,
        "proj/a.py": f"""\
            import transformers
            import transformers.trainer as t
            from proj.utils import Version

            def f():
                if Version(transformers.__version__) >= Version("{literal}"):
                    t.A = 1
                else:
                    t.B = 1
        """,
    }
    refs = surface(tmp_path, files, ("proj.utils.Version",))
    assert windows(refs, Kind.PATCH, "transformers.trainer.A") == [{}]
    assert windows(refs, Kind.PATCH, "transformers.trainer.B") == [{}]


def test_an_elif_reads_what_the_failed_conjunction_before_it_says(tmp_path):
    # unsloth's sentence_transformer: `if is_distilbert and transformers4: v4() elif
    # is_distilbert: v5()`: the elif runs only where transformers4 is false
    source = """\
        import transformers
        import transformers.trainer as t
        from packaging.version import Version

        V4 = Version(transformers.__version__).major < 5

        def f(kind):
            if kind == "a" and V4:
                t.A = 1
            elif kind == "b":
                t.B = 1  # nothing said of V4
            elif kind == "a":
                t.C = 1  # kind == "a" holds, so V4 failed
            elif V4 and kind == "c" and flag:
                t.D = 1  # V4 itself asserted: nothing failed
            else:
                t.E = 1
    """
    refs = surface(tmp_path, {"proj/__init__.py": "", "proj/a.py": source})
    trainer = "transformers.trainer"
    assert windows(refs, Kind.PATCH, f"{trainer}.A") == [{"transformers": "<5.dev0"}]
    assert windows(refs, Kind.PATCH, f"{trainer}.B") == [{}]
    assert windows(refs, Kind.PATCH, f"{trainer}.C") == [{"transformers": ">=5.dev0"}]
    assert windows(refs, Kind.PATCH, f"{trainer}.D") == [{"transformers": "<5.dev0"}]
    assert windows(refs, Kind.PATCH, f"{trainer}.E") == [{}]
