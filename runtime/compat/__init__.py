"""Reaches into the standard library's internals (see `flink_agents._compat`)."""
