"""Skills (upstream's ``flink_agents.api.skills``): folders of instructions and scripts a
chat model may load while it works.

A skill is a folder with a ``SKILL.md`` (YAML front matter with ``name`` and
``description``, then the instructions) and any files beside it (``scripts/``,
``references/``...). A `Skills` resource says where to find skill folders: each of its
`SkillSourceSpec` entries is a local folder or ``.zip`` (``Skills.from_local_dir``), a
``.zip`` at an http(s) URL (``Skills.from_url``) or a folder or ``.zip`` inside an
installed package (``Skills.from_package``). An agent may declare several (``@skills``
or ``env.add_resource(name, ResourceType.SKILLS, ...)``): their sources are merged.

A chat model setup given ``skills=["name", ...]`` tells the model, in a system message
after the prompt's first one, which of them exist, and offers it two built-in tools:
``load_skill`` (a skill's instructions or one of its files) and ``bash`` (a command).
Commands run only where ``skills.commands.enabled`` is on (off by default), only those
the setup allows (``allowed_commands``, or a script under one of its skills' folders or
``allowed_script_dirs``), within ``skills.command-timeout-s``, and with none of the
process's environment but ``PATH`` and the locale (docs/skills.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from flink_agents.api.resource import ResourceType, SerializableResource

__all__ = ["BASH_TOOL", "LOAD_SKILL_TOOL", "SkillCatalog", "SkillSourceSpec", "Skills"]

LOAD_SKILL_TOOL = "load_skill"
"""Name of the built-in tool that gives the model a skill's instructions or files."""
BASH_TOOL = "bash"
"""Name of the built-in tool that runs a command for the model."""


class SkillSourceSpec(BaseModel):
    """One place skills come from: a ``scheme`` (``local``, ``url``, ``package``; kept in
    lower case) and its parameters (``path``; ``url``; ``package`` and ``resource``).

    A scheme this project does not know (upstream's Java-only ``classpath``) is accepted
    here and refused when the skills are loaded, with the schemes that are known.
    """

    model_config = ConfigDict(frozen=True)

    scheme: str
    """How to read the source."""
    params: dict[str, str] = Field(default_factory=dict)
    """The scheme's parameters."""

    @field_validator("scheme")
    @classmethod
    def _lower_case(cls, value: str) -> str:
        return value.lower()

    def __hash__(self) -> int:
        return hash((self.scheme, tuple(sorted(self.params.items()))))


class Skills(SerializableResource):
    """Where an agent's skills come from: build one with `from_local_dir`, `from_url` or
    `from_package`."""

    sources: list[SkillSourceSpec] = Field(default_factory=list)
    """The sources, in order (a skill name found again later replaces the earlier one)."""

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.SKILLS

    @classmethod
    def from_local_dir(cls, *paths: str) -> Skills:
        """Skills from local folders (each sub-folder with a ``SKILL.md`` is a skill) or
        ``.zip`` files (each top-level folder with a ``SKILL.md`` is one)."""
        return cls(sources=[SkillSourceSpec(scheme="local", params={"path": p}) for p in paths])

    @classmethod
    def from_url(cls, *urls: str) -> Skills:
        """Skills from ``.zip`` files at http(s) URLs, laid out as `from_local_dir`'s."""
        return cls(sources=[SkillSourceSpec(scheme="url", params={"url": u}) for u in urls])

    @classmethod
    def from_package(cls, *pairs: tuple[str, str]) -> Skills:
        """Skills from ``(package, resource)`` pairs: ``resource`` is a folder or a
        ``.zip`` inside the installed package ``package`` (a dotted name)."""
        return cls(
            sources=[
                SkillSourceSpec(scheme="package", params={"package": p, "resource": r})
                for p, r in pairs
            ]
        )


@runtime_checkable
class SkillCatalog(Protocol):
    """What a chat model setup asks of the agent's skills (the runtime's ``load_skill``
    tool answers it)."""

    def discovery_prompt(self, names: Sequence[str]) -> str:
        """The system message that lists the skills ``names`` for the model; `ValueError`
        naming the known ones when one of them is not found."""
        ...

    def skill_dirs(self, names: Sequence[str]) -> list[Path]:
        """The folders of the skills ``names`` (of every skill when empty)."""
        ...
