"""Once-only warnings for the fixes: a fix that cannot apply says why, once per reason."""

from __future__ import annotations

import logging

logger = logging.getLogger("canary.fixes")
_seen: set[str] = set()


def warn_once(message: str, *args: object) -> None:
    """``logger.warning`` unless the same formatted message was already logged."""
    text = message % args if args else message
    if text in _seen:
        return
    _seen.add(text)
    logger.warning(text)
