"""Test support shipped with the package (as ``optuna.testing`` is): :mod:`hublab.testing.retriever_contract`, the
checks every retrieval method passes, for plugins to run over themselves. Imports pytest: a test dependency."""

#: the submodule a plugin's own tests import (it imports pytest)
__all__ = ["retriever_contract"]
