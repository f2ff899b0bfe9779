"""Skills at run time: reading skill folders (`sources`), the agent's catalog of them
(`SkillManager`), and the built-in ``load_skill`` and ``bash`` tools (`tools`)."""

from flink_agents.runtime.skill.manager import SkillManager
from flink_agents.runtime.skill.skill import AgentSkill, parse_skill_md
from flink_agents.runtime.skill.tools import BashTool, LoadSkillTool, add_skill_tools, skill_tools

__all__ = [
    "AgentSkill",
    "BashTool",
    "LoadSkillTool",
    "SkillManager",
    "add_skill_tools",
    "parse_skill_md",
    "skill_tools",
]
