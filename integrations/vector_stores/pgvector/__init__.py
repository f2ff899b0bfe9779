"""PostgreSQL with the pgvector extension: one vector store every subtask shares."""
