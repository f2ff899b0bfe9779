"""Long-term memory on mem0 (the ``mem0`` extra), pointed at the agent's own resources."""
