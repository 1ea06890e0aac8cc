"""Retriever pipelines: config, resources, and the pre-retrieval → retrieval → post-retrieval → generation flow."""
