"""Tools an agent's chat models can call."""
