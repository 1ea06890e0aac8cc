"""Prompts of the optional pipes (thesis Listings A.5-A.7, paraphrased; not HubLink's own prompts)."""

AUGMENT = """You improve questions for retrieval from a scholarly knowledge graph.
Rewrite the question so that it is unambiguous, add closely related keywords, and name the types of
the things asked about (e.g. "paper", "research object", "evaluation method"). Keep its meaning.
Question: {question}
"""
AUGMENT_SCHEMA = {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}

RERANK = """Rank the contexts by how useful they are to answer the question, most useful first.
Question: {question}
Contexts:
{contexts}
Return the ids of the contexts in the new order.
"""
RERANK_SCHEMA = {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "integer"}}},
                 "required": ["ids"]}

GENERATE = """Answer the question using only the context below. If the context is not sufficient, give the
partial information it contains and say that the question cannot be fully answered.
Question: {question}
Context:
{contexts}
Answer:"""
