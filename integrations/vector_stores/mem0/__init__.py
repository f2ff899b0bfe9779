"""mem0's vector stores (Qdrant, Chroma, pgvector, ...) as a flink-agents vector store."""
