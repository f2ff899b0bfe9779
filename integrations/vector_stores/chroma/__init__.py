"""Chroma: an embedded vector store (no server), or a Chroma server or Chroma Cloud."""
