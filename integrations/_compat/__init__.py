"""Reaches into the provider SDKs' internals (see `flink_agents._compat`): one module per
SDK family, each reach a named function with the versions it was checked on."""
