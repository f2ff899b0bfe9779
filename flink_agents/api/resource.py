"""Resources an agent uses (chat models, tools, prompts) and how they are described."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Resource", "ResourceDescriptor", "ResourceType", "SerializableResource"]


class ResourceType(str, Enum):
    """The kinds of resource an agent can declare and look up by name."""

    CHAT_MODEL = "chat_model"
    CHAT_MODEL_CONNECTION = "chat_model_connection"
    TOOL = "tool"
    PROMPT = "prompt"


class Resource(BaseModel, ABC):
    """Base of every resource: a pydantic model that knows its `ResourceType`.

    ``get_resource`` is set by the runtime so a resource can look up others by
    name (a chat model setup finds its connection and its tools this way).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    get_resource: Callable[[str, ResourceType], Resource] | None = Field(
        default=None, exclude=True, repr=False
    )
    """Looks up another resource of the same agent by name and type."""

    @classmethod
    @abstractmethod
    def resource_type(cls) -> ResourceType:
        """Which kind of resource this is."""


class SerializableResource(Resource, ABC):
    """A resource that is plain data (a prompt, say) and may be declared as an instance."""


class ResourceDescriptor:
    """How to build a resource: its class (or dotted path) and constructor arguments.

    >>> ResourceDescriptor(clazz="my_pkg.models.MyConnection", api_key="...")
    """

    def __init__(self, clazz: type[Resource] | str, **arguments: Any) -> None:
        self.clazz = clazz
        self.arguments = arguments

    def resolve_class(self) -> type[Resource]:
        """The resource class, importing it when given as a dotted path."""
        if isinstance(self.clazz, str):
            module_name, _, attr = self.clazz.rpartition(".")
            if not module_name:
                raise ValueError(f"resource class path {self.clazz!r} is not a dotted path")
            cls = getattr(importlib.import_module(module_name), attr)
        else:
            cls = self.clazz
        if not (isinstance(cls, type) and issubclass(cls, Resource)):
            raise TypeError(f"{self.clazz!r} is not a Resource class")
        return cls

    def build(
        self, get_resource: Callable[[str, ResourceType], Resource] | None = None
    ) -> Resource:
        """A new resource instance."""
        return self.resolve_class()(get_resource=get_resource, **self.arguments)

    def __repr__(self) -> str:
        name = self.clazz if isinstance(self.clazz, str) else self.clazz.__qualname__
        return f"ResourceDescriptor({name}, {sorted(self.arguments)})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ResourceDescriptor)
            and self.clazz == other.clazz
            and self.arguments == other.arguments
        )

    __hash__ = None  # type: ignore[assignment]
