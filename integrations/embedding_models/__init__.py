"""Embedding model adapters on the providers' official SDKs (OpenAI and compatible servers,
Ollama, Tongyi on DashScope) and a local model that needs no server."""
