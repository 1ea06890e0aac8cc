"""Embedder fine-tuning (``hublab train``, DVC stage ``train``): training questions generated from the graph,
the (question, positive) pairs with their held-out split, and the fine-tuning loop."""

#: the submodules: the pairs (plain data), the graph-generated questions and the fine-tuning loop
__all__ = ["finetune", "pairs", "questions"]
