"""Downstream patches: code in the projects canary serves that reaches into upstream
internals, registered so the checks protecting it can name it.

One section per upstream package, kept in the order of its catalog module. A ``reference``
says where the patch lives (repository and pull request), so a drift report leads the
maintainer straight to the code that breaks.
"""

from __future__ import annotations

from canary.fixes import Fix

# -- protected by canary/checks/test_transformers.py ------------------------------------
TRANSFORMERS_PATCHES: tuple[Fix, ...] = ()

# -- protected by canary/checks/test_trl.py ---------------------------------------------
TRL_PATCHES: tuple[Fix, ...] = ()

# -- protected by canary/checks/test_peft.py --------------------------------------------
PEFT_PATCHES: tuple[Fix, ...] = ()

DOWNSTREAM_PATCHES: tuple[Fix, ...] = (*TRANSFORMERS_PATCHES, *TRL_PATCHES, *PEFT_PATCHES)
