"""What a catalog check is made of: the ``@check`` declaration and the expectations.

A check is a plain pytest test in ``canary/checks/test_<package>.py`` that takes the
``upstream`` fixture (a :class:`canary.upstream.Snapshot`) and declares, with
``@check``, the files it reads, the fix that depends on it and its version window::

    pytestmark = pytest.mark.upstream("transformers")

    @check(reads=TRAINER, fix="accepts_loss_kwargs shadowing", since="4.46.0")
    def test_compute_loss_takes_num_items_in_batch(upstream):
        \"\"\"Trainer.compute_loss takes num_items_in_batch.\"\"\"
        compute_loss = upstream.module(TRAINER).cls("Trainer").method("compute_loss")
        expect_parameters(compute_loss, "num_items_in_batch")

When upstream has drifted, the failure says which fix breaks, what the check expects
(its docstring) and what upstream has instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from canary.codeindex import Call, Function
from canary.errors import Drift
from canary.fixes import get_fix

CheckFunction = TypeVar("CheckFunction", bound=Callable[..., Any])


@dataclass(frozen=True)
class Window:
    """The releases a check applies to: ``since`` inclusive, ``until`` exclusive."""

    since: str | None = None
    until: str | None = None

    @property
    def specifier(self) -> SpecifierSet:
        parts = []
        if self.since:
            parts.append(f">={self.since}")
        if self.until:
            parts.append(f"<{self.until}")
        return SpecifierSet(",".join(parts))

    def excludes(self, version: Version | None) -> bool:
        # A tree whose version cannot be read (a branch without a literal version) is
        # treated as newer than every release.
        if version is None:
            return self.until is not None
        return not self.specifier.contains(version, prereleases=True)

    def __str__(self) -> str:
        return str(self.specifier) or "every release"


def check(
    *,
    reads: str | Iterable[str],
    fix: str,
    since: str | None = None,
    until: str | None = None,
) -> Callable[[CheckFunction], CheckFunction]:
    """Declare a catalog check: the upstream files it reads, the fix at risk, its window."""
    get_fix(fix)  # a typo in the catalog is an error at collection, not a silent pass
    paths = (reads,) if isinstance(reads, str) else tuple(reads)
    if not paths:
        raise ValueError("a check must read at least one upstream file")
    window = Window(since, until)
    for bound in (since, until):
        if bound is not None:
            Version(bound)  # raises InvalidVersion for a bad bound, at collection

    def decorate(function: CheckFunction) -> CheckFunction:
        if not (function.__doc__ or "").strip():
            raise ValueError(f"check {function.__name__} needs a docstring saying what it asserts")

        @functools.wraps(function)
        def run_check(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except AssertionError as exc:  # Drift, or a plain assert in the check
                message = drift_message(function, fix, paths, kwargs.get("upstream"), exc)
            # Outside the except block: the report shows the drift once, not a chain.
            pytest.fail(message, pytrace=False)

        marker = pytest.mark.canary_check(reads=paths, fix=fix, window=window)
        return marker(run_check)  # type: ignore[return-value]

    return decorate


def drift_message(
    function: Callable[..., Any],
    fix: str,
    paths: tuple[str, ...],
    upstream: Any,
    exc: BaseException,
) -> str:
    expected = " ".join((function.__doc__ or "").split())
    where = f" in {upstream.case}" if upstream is not None else ""
    return (
        f"upstream drift{where} breaks the fix {fix!r}\n"
        f"  file: {', '.join(paths)}\n"
        f"  expected: {expected}\n"
        f"  found: {exc}"
    )


# -- expectations: each raises Drift saying what upstream has instead --------------------


def expect_parameters(function: Function, *names: str) -> None:
    """``function`` has each of ``names`` as a named parameter (not only via **kwargs)."""
    missing = [name for name in names if not function.signature.has(name)]
    if missing:
        raise Drift(
            f"{function.qualname} has no parameter {', '.join(map(repr, missing))}; "
            f"its signature is {function.signature}"
        )


def expect_keyword_accepted(function: Function, name: str) -> None:
    """``function`` can be called with ``name=...`` (a parameter, or **kwargs)."""
    if not function.signature.accepts_keyword(name):
        raise Drift(
            f"{function.qualname} cannot take {name}=...; its signature is {function.signature}"
        )


def expect_call(function: Function, callee: str) -> tuple[Call, ...]:
    """``function`` calls ``callee`` at least once; returns those calls."""
    found = function.calls_to(callee)
    if not found:
        called = sorted({call.func for call in function.calls})
        listing = ", ".join(called) or "nothing"
        raise Drift(f"{function.qualname} no longer calls {callee}; it calls: {listing}")
    return found
