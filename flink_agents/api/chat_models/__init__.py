"""Chat model base classes."""
