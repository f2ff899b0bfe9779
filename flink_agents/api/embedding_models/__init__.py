"""Embedding model base classes (`embedding_model`)."""
