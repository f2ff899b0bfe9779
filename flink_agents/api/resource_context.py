"""`ResourceContext`: what a resource may ask of the agent it belongs to (upstream's
interface): other resources of the agent, by name and type.

A resource reaches it as ``self.resource_context`` once the runtime has built it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flink_agents.api.resource import Resource, ResourceType
    from flink_agents.api.skills import SkillCatalog

__all__ = ["ResourceContext"]


class ResourceContext(ABC):
    """Looks up the other resources of the same agent."""

    @abstractmethod
    def get_resource(self, name: str, resource_type: ResourceType) -> Resource:
        """The resource ``name`` of ``resource_type``; `KeyError` when there is none."""

    def generate_available_skills_prompt(self, *skill_names: str) -> str:
        """The system message that lists the agent's skills ``skill_names`` for a model
        (docs/skills.md); ``""`` when the agent has no skills."""
        catalog = self._skill_catalog()
        return "" if catalog is None else catalog.discovery_prompt(skill_names)

    def get_skill_dirs(self, *skill_names: str) -> list[str]:
        """The folders of the skills ``skill_names`` (of every skill when none is named);
        ``[]`` when the agent has no skills."""
        catalog = self._skill_catalog()
        return [] if catalog is None else [str(d) for d in catalog.skill_dirs(skill_names)]

    def _skill_catalog(self) -> SkillCatalog | None:
        from flink_agents.api.resource import ResourceType
        from flink_agents.api.skills import LOAD_SKILL_TOOL, SkillCatalog

        try:
            tool = self.get_resource(LOAD_SKILL_TOOL, ResourceType.TOOL)
        except KeyError:
            return None
        return tool if isinstance(tool, SkillCatalog) else None
