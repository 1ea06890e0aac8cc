"""HubLink's LLM prompts (thesis Appendix A.1.1, paraphrased), each with a JSON schema so that small or
grammar-constrained models (llama.cpp) return parseable output."""

COMPONENTS = """Split the question into its components: the entities, values, types and constraints
that must be matched in a knowledge graph (e.g. "Which papers have been published by SpringerLink in
2020?" -> ["Publisher", "SpringerLink", "2020"]).
Question: {question}
"""
COMPONENTS_SCHEMA = {"type": "object", "properties": {"components": {"type": "array", "items": {"type": "string"}}},
                     "required": ["components"]}

PATH_TO_TEXT = """Describe the following knowledge graph path as one short, factual English sentence.
Path (subject, predicate, object triples):
{path}
Sentence:"""

PARTIAL = """You extract information that helps to answer a question from knowledge graph facts about
one publication. Extract *all* explicitly stated information that helps, even if it answers the question
only partially. If nothing is relevant, answer exactly "Insufficient Information".
Question: {question}
Common information: {common_information}
Facts:
{texts}
"""
PARTIAL_SCHEMA = {"type": "object", "properties": {"partial_answer": {"type": "string"},
                                                   "relevant": {"type": "boolean"}},
                  "required": ["partial_answer", "relevant"]}

FINAL = """Answer the question by combining the partial answers below. Use only their information, add
nothing else, and cite the source of every claim with its id in brackets, e.g. [1].
Question: {question}
Partial answers:
{partials}
Answer:"""

FILTER = """Given a question, its answer and numbered triples, return the ids of the triples that are
relevant or partially relevant to the answer.
Question: {question}
Answer: {answer}
Triples:
{triples}
"""
FILTER_SCHEMA = {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "integer"}}},
                 "required": ["ids"]}
