"""pip's configuration as uv options: the user's pip setup decides where packages come from."""

from __future__ import annotations

from canary.runtime.pipconfig import parse_pip_config, uv_index_settings

PIP_CONFIG_LIST = """\
:env:.default-timeout='180'
:env:.find-links='/srv/wheels'
global.cert='/etc/ssl/ca.pem'
global.constraint='/etc/pip/constraints.txt'
global.extra-index-url='file:///srv/a/simple file:///srv/b/simple'
global.find-links='/ignored/because/env/wins'
global.index-url='https://mirror.example/simple'
install.index-url='https://install.example/simple'
download.index-url='https://download-only.example/simple'
"""


def test_parse_pip_config_applies_pip_precedence():
    settings = parse_pip_config(PIP_CONFIG_LIST)
    assert settings["index-url"] == "https://install.example/simple"  # [install] over [global]
    assert settings["find-links"] == "/srv/wheels"  # PIP_* over files
    assert settings["extra-index-url"] == "file:///srv/a/simple file:///srv/b/simple"
    assert settings["default-timeout"] == "180"


def test_pip_variables_count_even_when_pip_config_list_is_silent():
    settings = parse_pip_config("", {"PIP_INDEX_URL": "https://env.example/simple", "HOME": "/"})
    assert settings == {"index-url": "https://env.example/simple"}


def test_uv_gets_pips_indexes_find_links_and_constraints():
    index = uv_index_settings(parse_pip_config(PIP_CONFIG_LIST), environ={})
    args = list(index.args)
    assert args[args.index("--index-url") + 1] == "https://install.example/simple"
    extras = [args[i + 1] for i, arg in enumerate(args) if arg == "--extra-index-url"]
    assert extras == ["file:///srv/a/simple", "file:///srv/b/simple"]
    # pip's semantics: best version across all indexes, not uv's first index that has it.
    assert args[args.index("--index-strategy") + 1] == "unsafe-best-match"
    assert args[args.index("--find-links") + 1] == "/srv/wheels"
    assert args[args.index("--constraint") + 1] == "/etc/pip/constraints.txt"
    assert index.env == {"SSL_CERT_FILE": "/etc/ssl/ca.pem", "UV_HTTP_TIMEOUT": "180"}


def test_uv_settings_leave_the_users_own_variables_alone():
    pip = {"cert": "/a.pem", "timeout": "5", "proxy": "http://proxy.example:3128"}
    index = uv_index_settings(pip, environ={"SSL_CERT_FILE": "/b.pem", "HTTPS_PROXY": "x"})
    assert index.env == {"UV_HTTP_TIMEOUT": "5"}
    assert uv_index_settings({"no-index": "true", "trusted-host": "h1 h2"}, {}).args == (
        "--no-index",
        "--allow-insecure-host",
        "h1",
        "--allow-insecure-host",
        "h2",
    )
    assert uv_index_settings({}, {}).args == ()
