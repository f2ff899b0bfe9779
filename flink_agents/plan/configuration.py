"""Upstream's plan-layer path of `AgentConfiguration` (``flink_agents.api.core_options``'s:
``AgentConfiguration({"key": value})``, ``get_int`` / ``get_str`` / ..., ``load_from_file``)."""

from flink_agents.api.core_options import AgentConfiguration

__all__ = ["AgentConfiguration"]
