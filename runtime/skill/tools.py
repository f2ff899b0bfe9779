"""The built-in skill tools: ``load_skill`` (a skill's instructions, or one of its files)
and ``bash`` (a command, under the `CommandPolicy` of the chat model setup that offered it).

The runtime adds both to an agent that has skills (`skill_tools`); a chat model setup
with ``skills`` offers them to its model. The ``bash`` tool the tool action runs is the
one `BashTool.for_setup` binds to the setup whose model asked: its allowed commands, its
skills' folders, and the options ``skills.commands.enabled`` and
``skills.command-timeout-s``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.configuration import ReadableConfiguration
from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.skills import BASH_TOOL, LOAD_SKILL_TOOL, Skills
from flink_agents.api.tools.tool import BaseTool, ToolMetadata
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.skill.commands import CommandPolicy, check_command, run_command
from flink_agents.runtime.skill.manager import SkillManager

__all__ = ["BashTool", "LoadSkillTool", "add_skill_tools", "skill_tools"]


class _LoadSkillArgs(BaseModel):
    name: str = Field(description="The name of the skill.")
    path: str | None = Field(
        default=None,
        description="A file of the skill, relative to its folder; leave it out for the "
        "skill's instructions.",
    )


class _BashArgs(BaseModel):
    command: str = Field(description="The command to run.")
    timeout: int = Field(default=60, description="Seconds it may take (60 by default).")
    cwd: str | None = Field(
        default=None,
        description="The folder to run it in (a skill's folder or one inside it).",
    )


class LoadSkillTool(BaseTool):
    """``load_skill``: a skill's instructions with the paths of its files, or one file."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    manager: SkillManager = Field(exclude=True)
    """The agent's skills."""

    def discovery_prompt(self, names: Sequence[str]) -> str:
        """The system message listing the skills ``names`` (`SkillCatalog`)."""
        return self.manager.discovery_prompt(names)

    def skill_dirs(self, names: Sequence[str]) -> list[Path]:
        """The folders of the skills ``names`` (`SkillCatalog`)."""
        return self.manager.skill_dirs(names)

    async def acall(self, **arguments: Any) -> str:
        return await asyncio.to_thread(self.load, **arguments)

    def close(self) -> None:
        """Remove what reading the skills unpacked (read again on a later use)."""
        self.manager.close()

    def load(self, name: str, path: str | None = None) -> str:
        """What the model gets for ``load_skill(name, path)``."""
        try:
            skill = self.manager.get(name)
        except ValueError as exc:
            return str(exc)
        if path is None or path == "SKILL.md":
            files = "\n".join(f"<file>{skill.directory / p}</file>" for p in skill.resource_paths())
            return (
                f'<skill_content name="{skill.name}">\n# Skill: {skill.name}\n\n'
                f"{skill.content.strip()}\n\n"
                f"The skill's folder: {skill.directory}\n"
                "Paths in it are relative to that folder.\n"
                f"<skill_files>\n{files}\n</skill_files>\n</skill_content>"
            )
        text = skill.resource(path)
        if text is None:
            return f"skill {name!r} has no text file {path!r} (files: {skill.resource_paths()})"
        return text


class BashTool(BaseTool):
    """``bash``: runs a command the setup allows (see `flink_agents.runtime.skill.commands`).

    Unbound (no setup), or with ``skills.commands.enabled`` off, it runs nothing and says
    why."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    manager: SkillManager = Field(exclude=True)
    """The agent's skills (their folders are where scripts may run from)."""
    policy: CommandPolicy | None = Field(default=None, exclude=True)
    """What may run; None until `for_setup` binds it."""

    def for_setup(
        self, setup: BaseChatModelSetup | None, config: ReadableConfiguration
    ) -> BashTool:
        """This tool bound to the policy of ``setup`` under ``config``."""
        if setup is None:
            return self
        dirs = [Path(d) for d in setup.allowed_script_dirs]
        if setup.skills:
            dirs.extend(self.manager.skill_dirs(setup.skills))
        policy = CommandPolicy(
            enabled=config.get(AgentExecutionOptions.SKILLS_COMMANDS_ENABLED),
            allowed_commands=tuple(setup.allowed_commands),
            script_dirs=tuple(dirs),
            timeout_s=config.get(AgentExecutionOptions.SKILLS_COMMAND_TIMEOUT),
        )
        return self.model_copy(update={"policy": policy})

    async def acall(self, **arguments: Any) -> str:
        return await asyncio.to_thread(self.run, **arguments)

    def run(self, command: str, timeout: float = 60, cwd: str | None = None) -> str:
        """What the model gets for ``bash(command, timeout, cwd)``."""
        policy = self.policy
        if policy is None or not policy.enabled:
            return (
                "Command rejected: running commands is off here (the option "
                "skills.commands.enabled is false)"
            )
        folder = Path(cwd) if cwd is not None else Path.cwd()
        if cwd is not None and not any(
            folder.resolve().is_relative_to(d.resolve()) for d in policy.script_dirs
        ):
            return f"Command rejected: cwd {cwd!r} is not inside a skill's folder"
        refused = check_command(command, policy, folder)
        if refused is not None:
            return f"Command rejected: {refused}"
        return run_command(command, folder, min(float(timeout), policy.timeout_s))


def skill_tools(skills: Mapping[str, Skills]) -> dict[str, BaseTool]:
    """The built-in ``load_skill`` and ``bash`` tools over the agent's ``skills``
    resources (sharing one `SkillManager`)."""
    manager = SkillManager(spec for s in skills.values() for spec in s.sources)
    load = LoadSkillTool(
        manager=manager,
        metadata=ToolMetadata(
            name=LOAD_SKILL_TOOL,
            description="Load a skill's instructions, or one of its files (path).",
            args_schema=_LoadSkillArgs.model_json_schema(),
        ),
    )
    bash = BashTool(
        manager=manager,
        metadata=ToolMetadata(
            name=BASH_TOOL,
            description="Run a shell command: only allowed commands, or scripts inside a "
            "skill's folder, may run.",
            args_schema=_BashArgs.model_json_schema(),
        ),
    )
    return {LOAD_SKILL_TOOL: load, BASH_TOOL: bash}


def add_skill_tools(plan: AgentPlan) -> None:
    """Give a plan with skills resources the built-in ``load_skill`` and ``bash`` tools
    (a tool the agent declares under one of those names stays)."""
    declared = plan.resources.get(ResourceType.SKILLS) or {}
    if not declared:
        return
    skills: dict[str, Skills] = {}
    for name, spec in declared.items():
        built = spec.build() if isinstance(spec, ResourceDescriptor) else spec
        if not isinstance(built, Skills):
            raise TypeError(f"skills resource {name!r} is a {type(built).__name__}, not Skills")
        skills[name] = built
    tools = plan.resources.setdefault(ResourceType.TOOL, {})
    for name, tool in skill_tools(skills).items():
        tools.setdefault(name, tool)
