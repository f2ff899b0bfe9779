"""Embedding models that run on this machine: Ollama's server (upstream's path), and a
model in the process that needs no server (`wordllama_embedding_model`)."""
