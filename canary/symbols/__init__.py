"""Where a dotted name lives in one package's tree, read statically (nothing imported).

:class:`PackageTree` answers ``lookup("transformers.Trainer.compute_loss")`` with a
:class:`Lookup`: found, missing, or unknown (cannot be decided statically; never to be
reported as missing). It reads the package's files through a loader the caller gives (a
path -> its code index), so it knows nothing of sources, caches or checks; the layers:

* :mod:`~canary.symbols.modules`: module files, loaded once through the loader;
* :mod:`~canary.symbols.effects`: containers built in steps (``__all__``, import structures);
* :mod:`~canary.symbols.lazy`: transformers' and trl's ``_LazyModule`` structures, by release;
* :mod:`~canary.symbols.dynamic`: the names a module ``__getattr__`` serves (peft's tuners);
* :mod:`~canary.symbols.exports`: a name in a module: definitions, imports, star imports;
* :mod:`~canary.symbols.classes`: the static MRO across files, and class members;
* :mod:`~canary.symbols.tree`: :class:`PackageTree`, any dotted path.
"""

from __future__ import annotations

from canary.symbols.lookup import Lookup
from canary.symbols.modules import Loader
from canary.symbols.tree import PackageTree

__all__ = ["Loader", "Lookup", "PackageTree"]
