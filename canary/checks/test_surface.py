"""The dependency surface as checks: every upstream name canary's own fixes use, on every
release inside the fix's window, and each ``--canary-surface TARGET``'s inside its declared
range. One case per (target, release); :mod:`canary.plugin.surface` parametrizes it."""


def test_surface(canary_surface):
    """Every reference the target makes to this release's package resolves here."""
    canary_surface()
