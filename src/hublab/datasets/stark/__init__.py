"""STaRK adapter: semi-structured KBs and QA splits in the stark-qa layout, wrapped as a KnowledgeGraph."""
