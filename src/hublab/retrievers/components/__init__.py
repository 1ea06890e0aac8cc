"""Building blocks shared by several retriever methods, one concept per module: corpus units, dense and
lexical indices, rank fusion, graph walking, similarity scoring, question text, LLM JSON calls, results."""
