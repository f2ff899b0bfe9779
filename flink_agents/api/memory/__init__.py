"""Long-term memory: named memory sets of text items, searched by meaning
(`flink_agents.api.memory.long_term_memory`)."""
