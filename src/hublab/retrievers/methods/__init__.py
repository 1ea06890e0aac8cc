"""Retriever methods: one module (or sub-package) per method; the module name is the ``retriever.type``.

See docs/adding-a-retriever.md for a complete 40-line example method.
"""

import pkgutil

#: the submodules, one per method, named as its ``retriever.type``: read from the folder, as the registry reads it,
#: so that a new method's file is all it takes
__all__ = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
