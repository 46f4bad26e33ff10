"""canary: a version-compatibility canary for projects that patch transformers, trl and peft.

The static tier reads upstream source without importing it and checks the symbols,
signatures and code shapes the fixes in :mod:`canary.fixes` depend on. The runtime tier
installs pinned stacks and runs the patched training step on tiny models.
"""

__version__ = "0.1.0"
