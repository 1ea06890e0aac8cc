# ruff: noqa: E501  (the thesis listings are kept verbatim, long lines included)
"""Prompts of the optional pipes: the thesis's Appendix A.1.2 listings verbatim (A.5 question augmentation,
A.6 context reranking, A.7 answer generation), in the layout the thesis prints them (markdown emphasis as in
its source, source lines unwrapped). Placeholders are the thesis's own names.

Output formats are the listings' own, parsed by ``pipeline.py``: A.5 answers with the augmented question as plain
text, A.6 with a bare list of context IDs ("for example: [2, 5, 8]"), A.7 with free text. Only A.6 has a schema
(a bare JSON array of integers, ``RERANK_SCHEMA``): backends constrain the output with it where the server can
(``llm/requests.py``) and add nothing to the prompt.
"""

from __future__ import annotations

# Listing A.5: Question Augmentation Prompt (verbatim)
AUGMENT = """You are an assistant designed to enhance user questions to improve the effectiveness of a Retrieval-Augmented Generation (RAG) system. Your task is to augment the original question by clarifying ambiguities, incorporating related keywords or phrases that will help the retrieval system fetch more accurate and comprehensive information, and add nouns or noun phrases to terms to clearly indicate their types or roles.

**Guidelines:**
1. **Clarify Ambiguous Terms:** If the original question contains terms that could be interpreted in multiple ways, clarify their meanings based on common usage or provide additional context.
2. **Incorporate Related Keywords:** Add synonyms or related terms that are pertinent to the topic to broaden the retrieval scope without deviating from the original intent.
3. **Explicit Noun Phrases:** Incorporate nouns or noun phrases to terms to specify their types (e.g., author, year, title, person, etc.)
4. **Maintain Original Intent:** Ensure that the augmented question retains the original purpose and does not introduce unrelated elements.

**Format:**
Provide the augmented question directly without additional commentary.

**Original Question:** "{original_question}"
"""

# Listing A.6: Context Reranking Prompt (verbatim). ``{contexts}`` is the "ID: context" mapping, one per line.
RERANK = """You are an intelligent assistant specialized in information retrieval and ranking.

Given a user question and a list of retrieved context IDs mapped to their respective contexts, your task is to rerank the context IDs in order of their relevance to the question. The structure of the mapping is 'ID: context'. The most relevant context ID should be listed first, followed by the next most relevant, and so on.

Think in steps: First determine the most important entity that is asked for in the question, then check which contexts are the most relevant to that entity. Then continue to the next most important entity and so on.

Provide only the "Re-Ranked Context IDs" for example: [2, 5, 8] without any additional explanations or commentary.

**Question:**
{question}

**Retrieved Contexts:**
{contexts}

**Instructions:**
- Analyze each context in relation to the question.
- Determine the relevance of each context to answering the question.
- Rank the context IDs from most relevant (1) to least relevant (n).

**Re-Ranked Contexts:**
"""
#: A.6's output format, a bare list of context IDs: enforced where the server can, never added to the prompt
RERANK_SCHEMA = {"type": "array", "items": {"type": "integer"}}

# Listing A.7: Answer Generation Prompt (verbatim)
GENERATE = """You are an advanced AI language model tasked with answering questions based solely on the provided context.
Your responses must be accurate, concise, and derived exclusively from the given information.

## Context Explanation:
{context_explanation}

## Context:
{context}

## Question:
{question}

## Instructions:
1. Carefully analyze the provided context.
2. Formulate a clear and concise answer based exclusively on the given context.
3. If the context lacks sufficient information to answer the question fully:
   a. Provide any partial information that is relevant and available.
   b. Clearly state: "The question cannot be fully answered with the provided context."
4. Do not introduce any external information or make assumptions beyond the given context.
5. If dealing with vector store chunks, try to connect information across chunks when relevant.
6. For knowledge graph data, interpret the relationships between entities to derive your answer.
7. Maintain a confident tone, but also indicate any uncertainties that arise from limitations in the context.

## Answer:
"""

#: ``{context_explanation}`` of A.7 for knowledge-graph contexts. The thesis does not print it; this is the text
#: its pipeline fills in when the contexts come from a knowledge graph (the SQA system's generation pipe,
#: ``KG_CONTEXT_EXPLANATION`` in the thesis's replication package). Every HubLab retriever returns graph contexts.
KG_CONTEXT_EXPLANATION = """The context is retrieved from a knowledge graph. This means that:
- The context can be either an already generated answer, entities, or triples
- Triples are in the format: (entity, relation, entity).
- Your task is to use the context given to you to answer the question."""
