"""Agents: the base class and the ready-made ReAct agent."""

from flink_agents.api.agents.agent import ActionFunction, Agent, AgentAction
from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.agents.types import OutputSchema

__all__ = ["ActionFunction", "Agent", "AgentAction", "OutputSchema", "ReActAgent"]
