"""The fixes the canary protects: patches that reach into transformers, trl and peft internals.

Each fix lives in its own module and imports torch/transformers lazily, so the static
tier can name fixes (``FIXES``) without importing any upstream package. Checks in the
catalog name the fix that depends on them; an unknown name is an error at collection.

Downstream patches that live in the projects canary serves (not in this package) are
registered too, in :mod:`canary.fixes.downstream`, so a check protecting one of them
names it and where it lives just as precisely.
"""

from __future__ import annotations

from canary.fixes.fix import Fix
from canary.fixes.registry import FIXES, PROJECT_FIXES, get_fix

__all__ = ["FIXES", "PROJECT_FIXES", "Fix", "get_fix"]
