"""Building blocks shared by several retriever methods, one concept per module: corpus units, dense and
lexical indices, rank fusion, graph walking, similarity scoring, question text, LLM JSON calls, results."""

#: the submodules, one per building block; a method imports the ones it uses
__all__ = ["dense_index", "fusion", "graph_walk", "lexical_index", "llm_json", "question_text", "reasoning", "results",
           "scoring", "unit_text", "units"]
