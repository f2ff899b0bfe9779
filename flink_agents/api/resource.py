"""Resources an agent uses (chat models, tools, prompts) and how they are described."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from flink_agents.api._class_path import import_class
from flink_agents.api.errors import UnknownOptionError

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

    A resource class declares its options as fields: a keyword it does not declare
    raises `UnknownOptionError` naming the closest ones (a class may opt out with
    ``model_config = ConfigDict(extra="allow")``). Provider extras go in a declared
    dict field, such as a chat model setup's ``params``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    get_resource: Callable[[str, ResourceType], Resource] | None = Field(
        default=None, exclude=True, repr=False
    )
    """Looks up another resource of the same agent by name and type."""

    def __init__(self, /, **data: Any) -> None:
        type(self).check_options(data)
        super().__init__(**data)

    @classmethod
    def option_names(cls) -> dict[str, str]:
        """Every keyword the class takes (field names and their aliases), each mapped to
        the name of its field."""
        names: dict[str, str] = {}
        for field_name, field in cls.model_fields.items():
            names[field_name] = field_name
            aliases: list[Any] = [field.alias]
            validation = field.validation_alias
            aliases.extend(
                validation.choices if isinstance(validation, AliasChoices) else [validation]
            )
            for alias in aliases:
                if isinstance(alias, str):
                    names[alias] = field_name
        return names

    @classmethod
    def check_options(cls, options: Iterable[str]) -> None:
        """Raise `UnknownOptionError` for a keyword the class does not take, and
        `ValueError` when two keywords name the same option."""
        if cls.model_config.get("extra") == "allow":
            return
        known = cls.option_names()
        given: dict[str, str] = {}
        for option in options:
            field_name = known.get(option)
            if field_name is None:
                public = [name for name in known if name != "get_resource"]
                raise UnknownOptionError.for_option(cls.__name__, option, public, listed=public)
            if field_name in given:
                raise ValueError(
                    f"{cls.__name__}: {given[field_name]!r} and {option!r} are the same "
                    "option; give one of them"
                )
            given[field_name] = option

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
        if isinstance(clazz, type) and issubclass(clazz, Resource):
            clazz.check_options(arguments)  # a class at hand: check its options now

    def check(self) -> None:
        """Raise `UnknownOptionError` when an argument is no option of the class (which
        is imported when given as a dotted path); a class given as a class was checked
        when this descriptor was made."""
        self.resolve_class().check_options(self.arguments)

    def resolve_class(self) -> type[Resource]:
        """The resource class, imported when given as a path (`import_class`)."""
        cls = import_class(self.clazz) if isinstance(self.clazz, str) else self.clazz
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
