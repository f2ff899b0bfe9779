"""The agent plan: what an `Agent` compiles to before it runs."""
