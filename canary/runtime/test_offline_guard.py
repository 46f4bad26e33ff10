"""The tier's own isolation: hub offline, and any inet connection fails the test."""

from __future__ import annotations

import os
import socket

import pytest


def test_hub_is_offline() -> None:
    import huggingface_hub.constants
    import transformers

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        assert os.environ[var] == "1"
    assert huggingface_hub.constants.HF_HUB_OFFLINE
    # An uncached hub id fails at once, without a connection attempt (the guard would fail it).
    with pytest.raises(OSError, match="cached files"):
        transformers.AutoConfig.from_pretrained("canary-does-not-exist/tiny")


def test_connections_are_refused_and_recorded(network_attempts: list[str]) -> None:
    with pytest.raises(OSError, match="forbidden"):
        socket.create_connection(("192.0.2.1", 443), timeout=1)  # TEST-NET-1, never routed
    with socket.socket() as sock, pytest.raises(OSError, match="forbidden"):
        sock.connect(("127.0.0.1", 9))  # loopback too, unless the test opts in
    assert len(network_attempts) == 2
    network_attempts.clear()  # recorded on purpose here; any other test would now fail


@pytest.mark.allow_loopback
def test_loopback_when_opted_in(network_attempts: list[str]) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5):
            conn, _ = server.accept()
            conn.close()
    assert network_attempts == []
    with pytest.raises(OSError, match="forbidden"):
        socket.create_connection(("192.0.2.1", 443), timeout=1)  # non-loopback still refused
    network_attempts.clear()
