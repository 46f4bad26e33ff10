"""Unit tests of the package-index and local sources, and of version detection.

The index source runs against a wheel built here and a fake ``pip`` script, so nothing
touches the network.
"""

from __future__ import annotations

import json
import sys
import textwrap
import zipfile
import zlib
from pathlib import Path

import pytest

from canary.errors import ConfigError, FetchError, RefNotFound
from canary.sources import Source
from canary.sources import version as versions
from canary.sources.index import IndexSource, read_wheel_members
from canary.sources.local import LocalSource, detect_version, find_package_root
from canary.sources.wheelfile import WheelDirectory

INIT = b'__version__ = "1.2.3"\n'
MOD = b"def f(x):\n    return x\n"
METADATA = b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.2.3\n\nVersion: 9.9.9 in the body\n"
WHEEL_MEMBERS = {
    "pkg/__init__.py": INIT,
    "pkg/sub/mod.py": MOD,
    "pkg-1.2.3.dist-info/METADATA": METADATA,
    "pkg-1.2.3.dist-info/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-any\n",
    "pkg-1.2.3.dist-info/RECORD": b"",
}


@pytest.fixture
def wheel(tmp_path) -> Path:
    path = tmp_path / "built" / "pkg-1.2.3-py3-none-any.whl"
    path.parent.mkdir()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in WHEEL_MEMBERS.items():
            archive.writestr(name, data)
    return path


FAKE_PIP = """
import json, shutil, sys
from pathlib import Path

args = sys.argv[1:]
Path({log!r}).write_text(json.dumps(args))
dest = Path(args[args.index("--dest") + 1])
requirement = args[-1]
mode, wheel = {mode!r}, Path({wheel!r})
if mode == "ok":
    shutil.copy(wheel, dest / wheel.name)
elif mode == "ok with sdist beside":
    shutil.copy(wheel, dest / wheel.name)
    (dest / "pkg-1.2.3.tar.gz").write_bytes(b"sdist")
elif mode == "not on index":
    print("ERROR: Could not find a version that satisfies the requirement " + requirement,
          file=sys.stderr)
    print("ERROR: No matching distribution found for " + requirement, file=sys.stderr)
    sys.exit(1)
elif mode == "network down":
    print("ERROR: HTTP error 503 while getting https://mirror.invalid/pkg", file=sys.stderr)
    sys.exit(2)
elif mode == "no pip module":
    print(sys.executable + ": No module named pip", file=sys.stderr)
    sys.exit(1)
elif mode == "two wheels":
    shutil.copy(wheel, dest / wheel.name)
    shutil.copy(wheel, dest / "pkg-1.2.3-py2-none-any.whl")
elif mode == "sdist only":
    (dest / "pkg-1.2.3.tar.gz").write_bytes(b"sdist")
elif mode == "nothing":
    pass
elif mode == "not a zip":
    (dest / wheel.name).write_bytes(b"this is not a zip")
"""


@pytest.fixture
def fake_pip(tmp_path, wheel):
    """``fake_pip(mode)``: an IndexSource for pkg 1.2.3 whose pip behaves as ``mode``."""
    log = tmp_path / "pip-args.json"

    def make(mode: str, version: str = "1.2.3") -> IndexSource:
        script = tmp_path / "fake_pip.py"
        script.write_text(FAKE_PIP.format(log=str(log), mode=mode, wheel=str(wheel)))
        source = IndexSource("pkg", version, pip=[sys.executable, str(script)], timeout=60)
        source.pip_args = lambda: json.loads(log.read_text())
        return source

    return make


# ------------------------------------------------------------------------- index source


@pytest.mark.parametrize("mode", ["ok", "ok with sdist beside"])
def test_index_source_reads_members_from_the_downloaded_wheel(fake_pip, wheel, mode):
    source = fake_pip(mode)

    found = source.fetch(["pkg/__init__.py", "pkg/sub/mod.py", "pkg/absent.py", "pkg/sub"])

    assert found == {
        "pkg/__init__.py": INIT,
        "pkg/sub/mod.py": MOD,
        "pkg/absent.py": None,
        "pkg/sub": None,
    }
    assert source.bytes_downloaded == wheel.stat().st_size
    assert isinstance(source, Source)
    assert source.description == "pkg 1.2.3 from the package index"


def test_index_source_asks_pip_for_exactly_that_wheel_and_keeps_no_copy(fake_pip, wheel):
    source = fake_pip("ok")

    source.fetch(["pkg/__init__.py"])
    source.fetch(["pkg/sub/mod.py"])

    args = source.pip_args()
    assert args[0] == "download"
    assert args[-1] == "pkg==1.2.3"
    assert {"--no-deps", "--only-binary=:all:", "--no-input"} <= set(args)
    assert not Path(args[args.index("--dest") + 1]).exists()  # the wheel is not kept
    assert source.bytes_downloaded == 2 * wheel.stat().st_size


def test_a_kept_wheel_is_downloaded_once_and_read_for_every_later_file(fake_pip, wheel, tmp_path):
    source = fake_pip("ok")
    source.wheel_dir = tmp_path / "wheels"
    assert not source.available_offline

    first = source.fetch(["pkg/__init__.py"])
    second = source.fetch(["pkg/sub/mod.py", "pkg/absent.py"])

    assert first == {"pkg/__init__.py": INIT}
    assert second == {"pkg/sub/mod.py": MOD, "pkg/absent.py": None}
    assert source.bytes_downloaded == wheel.stat().st_size  # one download, two reads
    assert source.kept_wheel == tmp_path / "wheels" / "pkg" / "pkg-1.2.3.whl"
    assert source.available_offline
    assert [p.name for p in source.kept_wheel.parent.iterdir()] == ["pkg-1.2.3.whl"]


def test_a_kept_wheel_is_found_whichever_spelling_of_the_name_asks(fake_pip, wheel, tmp_path):
    # FlagEmbedding==1.4.2 kept as flagembedding: one project, one wheel, also offline
    source = fake_pip("ok")
    source.wheel_dir = tmp_path / "wheels"
    source.fetch(["pkg/__init__.py"])
    for spelling in ("PKG", "Pkg"):
        again = IndexSource(spelling, "1.2.3", wheel_dir=source.wheel_dir, offline=True)
        assert again.kept_wheel == source.kept_wheel
        assert again.fetch(["pkg/__init__.py"]) == {"pkg/__init__.py": INIT}
    # a wheel an older canary kept under the name as asked is still read, offline
    older = tmp_path / "older"
    (older / "Pkg").mkdir(parents=True)
    source.kept_wheel.rename(older / "Pkg" / "Pkg-1.2.3.whl")
    again = IndexSource("Pkg", "1.2.3", wheel_dir=older, offline=True)
    assert again.fetch(["pkg/__init__.py"]) == {"pkg/__init__.py": INIT}


def test_a_damaged_kept_wheel_is_downloaded_again_not_trusted(fake_pip, wheel, tmp_path):
    source = fake_pip("ok")
    source.wheel_dir = tmp_path / "wheels"
    source.kept_wheel.parent.mkdir(parents=True)
    source.kept_wheel.write_bytes(wheel.read_bytes()[:200])  # a download cut short

    assert source.fetch(["pkg/sub/mod.py"]) == {"pkg/sub/mod.py": MOD}
    assert source.bytes_downloaded == wheel.stat().st_size
    assert source.kept_wheel.read_bytes() == wheel.read_bytes()


def test_a_kept_wheel_read_file_by_file_is_opened_once(fake_pip, wheel, tmp_path, monkeypatch):
    source = fake_pip("ok")
    source.wheel_dir = tmp_path / "wheels"
    opened = []
    real = zipfile.ZipFile
    monkeypatch.setattr(zipfile, "ZipFile", lambda *a, **k: opened.append(a) or real(*a, **k))

    source.fetch([])  # downloads and keeps it, read where it is kept
    for path in ["pkg/__init__.py", "pkg/sub/mod.py", "pkg/absent.py"]:
        assert source.fetch([path]) == {path: WHEEL_MEMBERS.get(path)}
    assert opened == [(source.kept_wheel,)]
    # A wheel kept again (downloaded anew after damage) is read afresh, not the old one.
    source.kept_wheel.write_bytes(source.kept_wheel.read_bytes() + b"\0" * 8)
    assert source.fetch(["pkg/sub/mod.py"]) == {"pkg/sub/mod.py": MOD}
    assert len(opened) == 2


def test_a_kept_wheel_gives_each_file_s_crc_and_size_without_reading_it(fake_pip, tmp_path):
    source = fake_pip("ok")
    source.wheel_dir = tmp_path / "wheels"
    assert source.keeps_release
    assert source.fingerprints(["pkg/sub/mod.py"]) == {}  # nothing kept yet: read as usual
    source.fetch([])
    found = source.fingerprints(["pkg/sub/mod.py", "pkg/absent.py"])
    assert found == {"pkg/sub/mod.py": f"{zlib.crc32(MOD):08x}:{len(MOD)}"}


def test_a_wheel_directory_reads_stored_and_deflated_files_as_zipfile_does(tmp_path):
    path = tmp_path / "mixed.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("pkg/stored.py", INIT, compress_type=zipfile.ZIP_STORED)
        archive.writestr("pkg/deflated.py", MOD * 50, compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("pkg/empty.py", b"", compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("pkg/bzip2.py", MOD, compress_type=zipfile.ZIP_BZIP2)
    directory = WheelDirectory(path)
    paths = ["pkg/stored.py", "pkg/deflated.py", "pkg/empty.py", "pkg/bzip2.py", "pkg/absent.py"]
    with zipfile.ZipFile(path) as archive:
        expected = {p: archive.read(p) if p in archive.namelist() else None for p in paths}
    assert directory.read(paths) == expected
    assert directory.members["pkg/stored.py"].fingerprint == f"{zlib.crc32(INIT):08x}:{len(INIT)}"


def test_a_file_whose_bytes_are_not_what_the_directory_says_is_a_bad_zip(tmp_path):
    path = tmp_path / "pkg.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("pkg/mod.py", MOD)
    directory = WheelDirectory(path)
    raw = path.read_bytes()
    path.write_bytes(raw.replace(MOD, MOD.upper()))  # same length, other bytes
    with pytest.raises(zipfile.BadZipFile, match="CRC-32"):
        directory.read(["pkg/mod.py"])
    path.write_bytes(b"XX" + raw[2:])  # the local header's signature
    with pytest.raises(zipfile.BadZipFile, match="signature"):
        directory.read(["pkg/mod.py"])


def test_a_failed_download_keeps_nothing(fake_pip, tmp_path):
    source = fake_pip("not a zip")
    source.wheel_dir = tmp_path / "wheels"

    with pytest.raises(FetchError, match="not a readable wheel"):
        source.fetch(["pkg/__init__.py"])

    assert not source.available_offline
    assert list(source.kept_wheel.parent.iterdir()) == []


def test_a_version_missing_from_the_index_is_ref_not_found(fake_pip):
    with pytest.raises(RefNotFound, match=r"pkg==9\.9 has no wheel") as caught:
        fake_pip("not on index", version="9.9").fetch(["pkg/__init__.py"])

    assert "No matching distribution found for pkg==9.9" in str(caught.value)


FETCH_FAILURES = {
    "network down": ["exit 2", "HTTP error 503"],
    "no pip module": ["pip is not installed", "ensurepip"],
    "two wheels": ["pkg-1.2.3-py2-none-any.whl", "pkg-1.2.3-py3-none-any.whl", "one wheel"],
    "sdist only": ["pkg-1.2.3.tar.gz", "instead of one wheel"],
    "nothing": ["left nothing instead of one wheel"],
    "not a zip": ["pkg 1.2.3 from the package index", "not a readable wheel"],
}


@pytest.mark.parametrize(("mode", "fragments"), FETCH_FAILURES.items(), ids=FETCH_FAILURES.keys())
def test_a_pip_failure_is_a_fetch_error_that_says_what_happened(fake_pip, mode, fragments):
    with pytest.raises(FetchError) as caught:
        fake_pip(mode).fetch(["pkg/__init__.py"])

    assert not isinstance(caught.value, RefNotFound)
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_a_pip_that_cannot_be_run_is_a_fetch_error_mentioning_pip(tmp_path):
    source = IndexSource("pkg", "1.2.3", pip=[str(tmp_path / "no-such-pip")])

    with pytest.raises(FetchError, match=r"cannot run .*no-such-pip.*is pip installed"):
        source.fetch(["pkg/__init__.py"])


def test_read_wheel_members_of_a_non_zip_is_a_fetch_error(tmp_path):
    bogus = tmp_path / "pkg-1.2.3-py3-none-any.whl"
    bogus.write_bytes(b"<html>proxy login</html>")

    with pytest.raises(FetchError, match=r"origin here: pkg-1\.2\.3-py3-none-any\.whl is not a"):
        read_wheel_members(bogus, ["pkg/__init__.py"], origin="origin here")


# ------------------------------------------------------------------------- local layouts


@pytest.fixture
def tree(tmp_path):
    """``tree({relative path: text})`` writes the files and returns the folder."""

    def make(files: dict[str, str]) -> Path:
        base = tmp_path / "tree"
        for name, text in files.items():
            file = base / name
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(textwrap.dedent(text))
        base.mkdir(exist_ok=True)
        return base

    return make


LITERAL_INIT = '__version__ = "1.0.0"\n'
LAYOUTS = {
    "repo with src": ({"src/pkg/__init__.py": LITERAL_INIT}, ".", "src"),
    "flat repo": ({"pkg/__init__.py": LITERAL_INIT, "pyproject.toml": ""}, ".", "."),
    "installed": (
        {"site/pkg/__init__.py": LITERAL_INIT, "site/pkg-1.0.0.dist-info/METADATA": ""},
        "site",
        "site",
    ),
    "package folder of a flat repo": ({"pkg/__init__.py": LITERAL_INIT}, "pkg", "."),
    "package folder under src": ({"src/pkg/__init__.py": LITERAL_INIT}, "src/pkg", "src"),
}


@pytest.mark.parametrize(("files", "given", "root"), LAYOUTS.values(), ids=LAYOUTS.keys())
def test_find_package_root_accepts_every_layout(tree, files, given, root):
    base = tree(files)

    assert find_package_root("pkg", base / given) == base / root


BAD_TREES = {
    "missing path": ({}, "absent", "does not exist"),
    "a file": ({"pkg.py": ""}, "pkg.py", "is not a folder"),
    "another package": ({"other/__init__.py": ""}, ".", "this is not a pkg tree"),
    "package folder without init": ({"pkg/core.py": ""}, "pkg", "this is not a pkg tree"),
}


@pytest.mark.parametrize(("files", "given", "problem"), BAD_TREES.values(), ids=BAD_TREES.keys())
def test_a_tree_that_is_not_the_package_names_the_flag(tree, files, given, problem):
    path = tree(files) / given

    with pytest.raises(ConfigError) as caught:
        LocalSource.from_path("pkg", path)

    assert f"--canary-local pkg={path}" in str(caught.value)
    assert problem in str(caught.value)


def test_local_source_reads_files_in_place(tree):
    base = tree({"src/pkg/__init__.py": LITERAL_INIT, "src/pkg/sub/mod.py": "x = 1\n"})

    source = LocalSource.from_path("pkg", base)

    assert source.fetch(["pkg/sub/mod.py", "pkg/absent.py", "pkg/sub"]) == {
        "pkg/sub/mod.py": b"x = 1\n",
        "pkg/absent.py": None,
        "pkg/sub": None,
    }
    assert isinstance(source, Source)
    assert source.ref == "1.0.0"
    assert source.bytes_downloaded == 0
    assert source.description == f"pkg 1.0.0 from {base / 'src' / 'pkg'}"


# ---------------------------------------------------------------------- version detection

COMPUTED_INIT = "from .utils import get_version\n__version__ = get_version()\n"
# Highest priority first; each declares a different version.
VERSION_SOURCES = [
    ("pkg/__init__.py", '__version__ = "1.0.0"\n'),
    ("pkg/VERSION", "2.0.0\n"),
    ("pkg-3.0.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: pkg\nVersion: 3.0.0\n"),
    ("pyproject.toml", '[project]\nname = "pkg"\nversion = "4.0.0"\n'),
    ("setup.py", 'from setuptools import setup\nsetup(name="pkg", version="5.0.0")\n'),
    ("setup.cfg", "[metadata]\nname = pkg\nversion = 6.0.0\n"),
]


@pytest.mark.parametrize(
    "dropped",
    [pytest.param(n, id=name, marks=[]) for n, (name, _) in enumerate(VERSION_SOURCES)],
)
def test_version_detection_takes_the_first_declaration_in_order(tree, dropped):
    files = dict(VERSION_SOURCES[dropped:])
    files.setdefault("pkg/__init__.py", COMPUTED_INIT)  # computed: falls through

    source = LocalSource.from_path("pkg", tree(files))

    assert source.ref == f"{dropped + 1}.0.0"


def test_version_detection_reads_packaging_files_beside_src(tree):
    base = tree({"src/pkg/__init__.py": COMPUTED_INIT, "pyproject.toml": VERSION_SOURCES[3][1]})

    assert LocalSource.from_path("pkg", base).ref == "4.0.0"


@pytest.mark.parametrize(
    ("dist_info", "found"),
    [
        ("my_pkg-3.0.0.dist-info", "3.0.0"),
        ("My-Pkg-3.0.0.dist-info", "3.0.0"),
        ("my.pkg-3.0.0.dist-info", "3.0.0"),
        ("my_pkg_extras-3.0.0.dist-info", None),
        ("other-3.0.0.dist-info", None),
    ],
)
def test_metadata_counts_only_for_a_dist_info_of_the_same_name(tree, dist_info, found):
    base = tree(
        {
            "my_pkg/__init__.py": COMPUTED_INIT,
            f"{dist_info}/METADATA": "Metadata-Version: 2.1\nName: x\nVersion: 3.0.0\n",
        }
    )

    assert detect_version("my_pkg", base) == found


def test_a_tree_without_a_version_asks_for_one(tree):
    base = tree({"pkg/__init__.py": COMPUTED_INIT, "pyproject.toml": "[project]\nname = 'pkg'\n"})

    with pytest.raises(ConfigError, match="cannot tell the version") as caught:
        LocalSource.from_path("pkg", base)

    assert f"--canary-local pkg@VERSION={base}" in str(caught.value)


def test_a_stated_version_overrides_the_tree(tree):
    base = tree({"pkg/__init__.py": LITERAL_INIT})

    assert LocalSource.from_path("pkg", base, version="7.7.7").ref == "7.7.7"


# ---------------------------------------------------------------------- version helpers


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('__version__ = "5.6.0.dev0"\n', "5.6.0.dev0"),
        ('__version__: str = "1.0"\n', "1.0"),
        ('import x\n__version__ = x.v\n__version__ = "2.0"\n', "2.0"),
        ("__version__ = get_version()\n", None),
        ("__version__ = 1\n", None),
        ('if True:\n    __version__ = "1.0"\n', None),
        ('version = "1.0"\n', None),
        ('__version__ = "1.0"\ndef broken(:\n', None),
        ("", None),
    ],
    ids=[
        "plain",
        "annotated",
        "literal after computed",
        "computed",
        "not a string",
        "not module level",
        "other name",
        "syntax error",
        "empty",
    ],
)
def test_literal_dunder_version(source, expected):
    assert versions.literal_dunder_version(source.encode()) == expected


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"pkg/__init__.py": b'__version__ = "1.0"', "pkg/VERSION": b"2.0"}, "1.0"),
        ({"pkg/__init__.py": b"__version__ = v()", "pkg/VERSION": b"  2.0\nnotes\n"}, "2.0"),
        ({"pkg/__init__.py": b"__version__ = v()", "pkg/VERSION": b"\n  \n"}, None),
        ({"pkg/VERSION": b"2.0\n"}, "2.0"),
        ({}, None),
    ],
    ids=["init wins", "version file first line", "blank version file", "no init", "nothing"],
)
def test_version_from_package_files(files, expected):
    assert versions.version_from_package_files("pkg", files.get) == expected
    assert set(files) <= set(versions.package_version_files("pkg"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Metadata-Version: 2.1\nName: pkg\nVersion: 1.2.3\n", "1.2.3"),
        ("Metadata-Version: 2.1\nName: pkg\n", None),
    ],
)
def test_version_from_metadata_ignores_metadata_version(text, expected):
    assert versions.version_from_metadata(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[project]\nversion = "1.2.3"\n', "1.2.3"),
        ('[project]\ndynamic = ["version"]\n', None),
        ('[tool.poetry]\nversion = "1.2.3"\n', None),
        ("[project]\nversion = 1\n", None),
        ("[project\n", None),
    ],
    ids=["literal", "dynamic", "not [project]", "not a string", "invalid TOML"],
)
def test_version_from_pyproject(text, expected):
    assert versions.version_from_pyproject(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('setup(name="pkg", version="1.2.3")\n', "1.2.3"),
        ("setup(name='pkg', version=get_version())\n", None),
        ('other(version="1.2.3")\n', None),
        ('setup(name="pkg")\n', None),
        ("setup(\n", None),
        pytest.param(
            'import setuptools\nsetuptools.setup(name="pkg", version="1.2.3")\n',
            "1.2.3",
            id="setuptools.setup",
        ),
    ],
    ids=["literal", "computed", "not setup", "no version", "syntax error", None],
)
def test_version_from_setup_py(text, expected):
    assert versions.version_from_setup_py(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[metadata]\nname = pkg\nversion = 1.2.3\n", "1.2.3"),
        ("[options]\nversion = 1.2.3\n", None),
        ("[metadata]\nname = pkg\n\n[options]\nversion = 1.2.3\n", None),
        pytest.param(
            "[metadata]\nname = pkg\nversion = attr: pkg.__version__\n",
            None,
            id="attr directive",
        ),
        pytest.param(
            "[metadata]\nname = pkg\nversion = file: VERSION\n",
            None,
            id="file directive",
        ),
    ],
    ids=["literal", "other section", "metadata has none", None, None],
)
def test_version_from_setup_cfg(text, expected):
    assert versions.version_from_setup_cfg(text) == expected


def test_a_kept_wheel_and_a_local_tree_list_their_folders(fake_pip, wheel, tmp_path, tree):
    """What transformers' define_import_structure reads (a folder's entries) is only known
    from a listing: a kept wheel lists its names, a local tree its directory; a wheel not
    kept yet cannot list, and says so with None rather than an empty folder."""
    source = fake_pip("ok")
    source.wheel_dir = tmp_path / "wheels"
    assert source.listdir("pkg") is None  # nothing kept yet
    source.fetch(["pkg/__init__.py"])
    assert source.listdir("pkg") == ["__init__.py", "sub"]
    assert source.listdir("pkg/sub/") == ["mod.py"]
    assert source.listdir("pkg/none") is None

    base = tree({"src/pkg/__init__.py": LITERAL_INIT, "src/pkg/sub/mod.py": "x = 1\n"})
    local = LocalSource.from_path("pkg", base)
    assert local.listdir("pkg/sub") == ["mod.py"]
    assert local.listdir("pkg/none") is None
