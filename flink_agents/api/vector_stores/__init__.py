"""Vector stores: documents with embeddings, searched by meaning (upstream's API)."""
