"""A dependency the project pins to one release narrows the upstream releases installable
beside it to what that release requires: read from its metadata, on a wheel folder pip
reads offline."""

from __future__ import annotations

import tarfile
import zipfile

import pytest

from canary.errors import InfrastructureError
from canary.surface.pins import exact_pins, index_requirements, pinned_out


@pytest.mark.parametrize(
    ("spec", "pinned"),
    [
        ("==0.7.2", "0.7.2"),
        ("==0.7.*", None),  # a wildcard: the resolver picks
        (">=0.7", None),
        ("<0.8,==0.7.2", None),  # two specifiers: read as a range
        ("not a specifier", None),
    ],
)
def test_only_an_exact_pin_says_which_release_is_installed(spec, pinned):
    assert exact_pins({"mlx-vlm": spec}).get("mlx-vlm") == pinned


def test_a_release_a_pin_does_not_allow_cannot_be_installed_beside_the_project():
    pinned = {"mlx-vlm": {"transformers": ">=5.14.0"}, "other": {"numpy": "<2"}}
    pins = {"mlx-vlm": "0.7.2", "other": "1.0"}
    assert pinned_out(pinned, pins, "transformers", "5.0.0") == (
        "its pin mlx-vlm==0.7.2 requires transformers>=5.14.0"
    )
    assert pinned_out(pinned, pins, "transformers", "5.14.0") is None
    assert pinned_out(pinned, pins, "transformers", "5.15.0rc1") is None  # a pre-release too
    assert pinned_out(pinned, pins, "peft", "0.1") is None  # no pin requires peft


def wheel(folder, name: str, version: str, *requires: str) -> None:
    """A wheel of ``name`` whose METADATA requires ``requires`` (all pip reads of it)."""
    info = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {line}\n" for line in requires
    )
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as archive:
        archive.writestr(f"{name}/__init__.py", "")
        archive.writestr(f"{info}/METADATA", metadata)
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n")
        archive.writestr(f"{info}/RECORD", "")


def test_the_index_metadata_gives_each_pins_core_requirements(tmp_path):
    wheel(tmp_path, "vlmkit", "0.7.2", "transformers>=5.14.0", "numpy; extra == 'docs'")
    wheel(tmp_path, "other", "1.0", "Transformers<6")
    local = ("--no-index", "--find-links", str(tmp_path))
    found = index_requirements({"vlmkit": "0.7.2", "other": "1.0"}, pip_args=local)
    # an extra's requirement applies to no plain install
    assert found == {"vlmkit": {"transformers": ">=5.14.0"}, "other": {"transformers": "<6"}}
    with pytest.raises(InfrastructureError, match="pip could not read the metadata of vlmkit"):
        index_requirements({"vlmkit": "9.9"}, pip_args=local)


def test_a_pin_published_only_as_source_is_never_built(tmp_path):
    # gft-cpu pins numpy==1.21, which has no wheel for this Python: reading its metadata
    # would run its build, code from the index; it is read as not found instead
    marker = tmp_path / "built"
    source = tmp_path / "source"
    (source / "srconly").mkdir(parents=True)
    (source / "srconly" / "__init__.py").write_text("")
    (source / "setup.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        "from setuptools import setup\nsetup(name='srconly', version='1.0', packages=['srconly'])\n"
    )
    links = tmp_path / "links"
    links.mkdir()
    with tarfile.open(links / "srconly-1.0.tar.gz", "w:gz") as archive:
        archive.add(source, arcname="srconly-1.0")
    # no build isolation: the build needs nothing from an index, so only the rule stops it
    local = ("--no-index", "--find-links", str(links), "--no-build-isolation")
    with pytest.raises(InfrastructureError, match="pip could not read the metadata of srconly"):
        index_requirements({"srconly": "1.0"}, pip_args=local)
    assert not marker.exists()
