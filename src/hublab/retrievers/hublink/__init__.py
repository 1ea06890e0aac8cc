"""HubLink (thesis Ch. 4): hub-based retrieval over research knowledge graphs."""
