"""Retriever methods: one module (or sub-package) per method; the module name is the ``retriever.type``.

See docs/adding-a-retriever.md for a complete 40-line example method.
"""
