"""Vector store backends (`flink_agents.api.vector_stores.vector_store.BaseVectorStore`)."""
