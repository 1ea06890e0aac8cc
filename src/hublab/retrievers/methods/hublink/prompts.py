# ruff: noqa: E501  (the thesis listings are kept verbatim, long lines included)
"""HubLink's LLM prompts: the thesis's Appendix A.1.1 listings verbatim (A.1 partial answer, A.2 final answer,
A.3 question components, A.4 triple filtering), including their few-shot examples. Text as in the thesis's
listing source (its markdown headers and ``` fences; the listing indentation removed, source lines unwrapped).

The thesis prints no listing for PATHTOTEXT (Alg. 6; §4.2 only says "an LLM ... generates a natural language
description"); ``PATH_TO_TEXT`` is ours, written to that description (docs/hublink.md).

Structured output: A.3 asks for "a valid python list of strings" and A.4 for "[ID1, ID2, ID3, ...]"; their
schemas are exactly that format, a bare JSON array. The prompts are sent as printed: a backend constrains the
output with the schema where the server can (llama.cpp: a grammar; vLLM/Ollama: ``json_schema``) and otherwise
parses the reply leniently (OpenAI's structured output needs an object at the top, so it gets none); nothing is
added to the prompt (``llm/requests.py``). A.1 and A.2 ask for free text: no schema.
"""

from __future__ import annotations

import hashlib

# Listing A.1: Partial Answer Generation Prompt (verbatim, including the thesis's duplicated "2.")
PARTIAL = """### Task Description:
You are given a question and a set of context passages. Your task is:
1. Carefully examine the provided contexts.
2. Extract all explicitly stated information from the contexts that helps answer the question (even if the information is partial, incomplete, or does not fully resolve the question).
2. If you find relevant but partial information, you must clearly present it.
3. ONLY IF no explicitly relevant information at all is present, then clearly state:
```
Insufficient Information.
```
### Examples:
#### Example 1: No Relevant Information
- **Question:** "Who wrote Paper X?"
- **Provided Texts:**
  "Paper X discusses software design."
- **Answer:**
  ```
  Insufficient information.
  ```
#### Example 2: Direct Information
- **Question:** "When was Paper X published?"
- **Provided Texts:**
  "Paper X was published in 2020."
- **Answer:**
  "Paper X was published in 2020."
#### Example 3: Partial Information
- **Question:** "When was Paper Y published compared to Paper Z?"
- **Provided Texts:**
  "Paper Y was published in 2018."
- **Answer:**
  "Paper Y was published in 2018. However, the publication date of Paper Z is not provided in the texts. "
#### Example 4: Partial Information
- **Question:** "How many papers include X?"
- **Provided Texts:**
  "Paper A includes X."
- **Answer:**
  "The Paper with the title 'Paper A' includes X. However, this is only one instance, and there may be more papers that include X."
---
### Start Your Task
If any relevant information is found, even if it is just a single mention or a partial detail, forward that information. Do not conclude 'Insufficient Information' if at least one explicit data point exists.
**Question:**
{question}
**All Texts have the following information in common:**
{common_information}
**Provided Texts:**
{texts}
**Answer:**
"""

#: A partial answer containing this (case-insensitive) marks the hub as having no relevant information.
INSUFFICIENT = "insufficient information"

# Listing A.2: Final Answer Generation Prompt (verbatim)
FINAL = """### Task Description:
You are an expert text synthesizer. Your task is to combine the provided partial answers into a coherent and comprehensive final answer. Each partial answer has a source identification provided as [ID] that you should cite in the final answer.

### Constraints:

- Do not introduce any external information, personal opinions, or interpretations beyond what is provided in the partial answers.
- If a partial answer contains identification objects such as object_1, object_2, etc., do not include the object identification in the final answer just use the source id [ID] as mentioned above.
- Ensure clarity and coherence in the final output.

### Question:
{question}

### Partial Answers:
{partial_answers}

### Final Answer:
"""

# Listing A.3: Question Component Extraction Prompt (verbatim)
COMPONENTS = """### Task Description:
Please analyze the following question and break it down into its key components or claims.

### Instructions:
- Break down the question into its key components or claims.
- Your output has to be a valid python list of strings.
- Do not use any external information, personal opinions, or interpretations beyond the given texts. Do not make any assumptions and do not answer the question.
- Do not include any additional explanations or commentary. Just provide the list of components.

### Examples:
Question: What are the research questions in the paper titled 'Artificial Intelligence in Healthcare'?
Components: ['Research Questions', 'Artificial Intelligence in Healthcare']
Question: Which publications include the research object 'Architecture Analysis Method'?
Components: ['Research Object', 'Architecture Analysis Method']
Question: Which papers have been published by SpringerLink in 2020?
Components: ['Publisher', 'SpringerLink', '2020']

### Start Your Task:
Question: {question}
"""
#: A.3's output format, a list of strings (no object wrapper: the listing asks for the bare list)
COMPONENTS_SCHEMA = {"type": "array", "items": {"type": "string"}}

# Listing A.4: Triple Filtering Prompt (verbatim)
FILTER = """### Task Description:
You are a knowledgeable assistant. Given a question, a answer and a list of ID-triple mappings in the format "ID: (subject, predicate, object)" determine which triples provide direct information essential for answering the question. If a triple is relevant or partially relevant, include its ID in the final output; otherwise, exclude it. Provide in your answer only a list of the final triple IDs and do not provide any additional explanations or commentary. If no triples are relevant, return an empty list.

### Required Output Format:
[ID1, ID2, ID3, ...]

### Question:
{question}

### Answer:
{answer}

### Retrieved Contexts:
{contexts}
"""
#: A.4's output format, "[ID1, ID2, ID3, ...]" (no object wrapper)
FILTER_SCHEMA = {"type": "array", "items": {"type": "integer"}}

# PATHTOTEXT (Alg. 6 / Alg. 17): the project's own prompt (the thesis prints no listing for it), written to
# §4.2's description of T_path.
PATH_TO_TEXT = """### Task Description:
Convert the following path from a knowledge graph into a natural language description. The path is a
sequence of (subject, predicate, object) triples; each triple continues from the object of the one before.

### Instructions:
- Describe every triple of the path and how the triples are connected, in one coherent paragraph of prose.
- Use only the information in the path: add no external facts, interpretations or conclusions.
- Leave out identifiers and URIs (text starting with "http://" or "https://").
- Answer with the description only, without comments.

### Path:
{path}

### Description:
"""

#: Identifies the wording of the index-time prompt: part of the index fingerprint when paths are
#: verbalised by the LLM, so a changed prompt re-indexes.
PATH_TO_TEXT_VERSION = hashlib.sha256(PATH_TO_TEXT.encode()).hexdigest()[:8]
