"""Chat model connections for provider APIs."""
