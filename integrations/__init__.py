"""Integrations with model providers and other services."""
