"""Retriever pipelines: config, resources, and the pre-retrieval → retrieval → post-retrieval → generation flow."""

#: the submodules: the config, its checks, the resources (graphs, models, indices) and the flow; importing
#: the package loads none of them
__all__ = ["config", "hub_types", "pipeline", "prompts", "resources", "validate"]
