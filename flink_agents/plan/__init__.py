"""The agent plan: what an `Agent` compiles to before it runs."""

from flink_agents.plan.agent_plan import ActionSpec, AgentPlan, ResourceSpec

__all__ = ["ActionSpec", "AgentPlan", "ResourceSpec"]
