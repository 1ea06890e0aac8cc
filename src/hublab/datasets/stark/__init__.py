"""STaRK adapter: semi-structured KBs and QA splits in the stark-qa layout, wrapped as a KnowledgeGraph."""

#: the submodules: the stark-qa layout reader and a small synthetic SKB for offline tests and demos
__all__ = ["skb", "synthetic"]
