"""4StepFocus: triplet prefiltering before vector ranking, with an optional LLM rerank."""

from hublab.retrievers.methods.four_step_focus.retriever import FourStepFocusRetriever

__all__ = ["FourStepFocusRetriever"]
