"""Runtime-tier pytest setup: hub offline, no network, tiny deterministic models."""

from __future__ import annotations

import os

# The same variables the runner sets for the tier's subprocess. From the package itself:
# importing them loads no hub package and none of the runner's modules.
from canary.runtime import OFFLINE_ENV

# Before anything imports huggingface_hub/transformers/datasets: they read these at import.
os.environ.update(OFFLINE_ENV)
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_DISABLED", "true")

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs CUDA; skipped with a reason without it")
    config.addinivalue_line(
        "markers",
        "behaviour: the fixes' training-step behaviour, run on every release by "
        "`python -m canary runtime --sweep` (docs/sweep.md)",
    )
    config.addinivalue_line(
        "markers", "allow_loopback: the test may open connections to 127.0.0.1/::1"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    try:
        import torch
    except ImportError:
        # Not a skip: a runtime run that checked nothing must not read as green.
        raise pytest.UsageError(
            "the runtime tier needs torch, transformers, peft and trl installed: run "
            "`python -m canary runtime` (one environment per pin set in tags.toml), or "
            "install a pin set yourself and run `pytest canary/runtime` there"
        ) from None

    # CANARY_GPU_SMOKE=1 runs the gpu cases small on CPU, to exercise them without a GPU.
    if torch.cuda.is_available() or os.environ.get("CANARY_GPU_SMOKE") == "1":
        return
    skip = pytest.mark.skip(reason="gpu case: torch.cuda.is_available() is False here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _is_loopback(address: Any) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _no_network(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[str]]:
    """Fail any test that opens an inet connection (loopback only with allow_loopback).

    The connect raises, and the test fails afterwards even if the code under test swallowed
    the error (huggingface_hub retries and falls back quietly).
    """
    allow_loopback = request.node.get_closest_marker("allow_loopback") is not None
    attempts: list[str] = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_create_connection = socket.create_connection

    def check(family: int, address: Any) -> None:
        if family not in (socket.AF_INET, socket.AF_INET6):
            return  # unix sockets: local IPC, not the network
        if allow_loopback and _is_loopback(address):
            return
        attempts.append(repr(address))
        raise OSError(f"canary runtime tier: network connection to {address!r} is forbidden")

    def connect(self: socket.socket, address: Any) -> None:
        check(self.family, address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(self.family, address)
        return real_connect_ex(self, address)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        check(socket.AF_INET, address)
        return real_create_connection(address, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    yield attempts  # the guard's own test inspects (and clears) what it recorded
    assert not attempts, f"test opened network connections: {attempts}"


@pytest.fixture
def network_attempts(_no_network: list[str]) -> list[str]:
    """The connections the guard refused so far in this test (for the guard's own test)."""
    return _no_network


@pytest.fixture
def hooks() -> Iterator[None]:
    """transformers.Trainer.__init__ carries the fixes for this test only."""
    from canary.fixes.trainer_hooks import trainer_hooks

    with trainer_hooks():
        yield


@pytest.fixture
def tokenizer() -> Any:
    from canary.runtime.models import tiny_tokenizer

    return tiny_tokenizer()
