"""durable."""
