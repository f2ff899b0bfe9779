"""`ResourceContext`: what a resource may ask of the agent it belongs to (upstream's
interface): other resources of the agent, by name and type.

A resource reaches it as ``self.resource_context`` once the runtime has built it
(upstream's skills methods are not here: there are no skills).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flink_agents.api.resource import Resource, ResourceType

__all__ = ["ResourceContext"]


class ResourceContext(ABC):
    """Looks up the other resources of the same agent."""

    @abstractmethod
    def get_resource(self, name: str, resource_type: ResourceType) -> Resource:
        """The resource ``name`` of ``resource_type``; `KeyError` when there is none."""
