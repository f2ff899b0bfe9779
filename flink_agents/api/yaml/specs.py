"""The YAML agent file format as pydantic models (upstream's `flink_agents.api.yaml.specs`).

A file is a `YamlAgentsDocument`: an optional ``agents:`` list of `AgentSpec`, and beside
it shared resources and actions that every agent of the environment may use. The models
are the format's one definition: the loader validates a file against them, and `export`
writes them as a JSON Schema (``python -m flink_agents.api.yaml.specs``) for editors.

Unknown keys are refused everywhere but in descriptor resources (`DescriptorSpec`), whose
extra keys are the resource class's arguments.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from flink_agents.api.tools.tool_parameter_injection import InjectedArg, normalize_injected_args

__all__ = [
    "ActionSpec",
    "AgentSpec",
    "DescriptorSpec",
    "Language",
    "MessageRole",
    "PackageSkillSpec",
    "PromptMessage",
    "PromptSpec",
    "SkillsSpec",
    "ToolSpec",
    "YamlAgentsDocument",
    "export",
]

Language = Literal["python", "java"]
"""What a resource, action or tool is written in (``type:``); unset means Python."""

_STRICT = ConfigDict(extra="forbid")


class DescriptorSpec(BaseModel):
    """A resource built from a `ResourceDescriptor` (chat model connections and setups,
    embedding models, vector stores, MCP servers): ``clazz`` is an alias (`aliases`) or a
    class path; every other key is an argument of the class."""

    model_config = ConfigDict(extra="allow")

    name: str
    """The resource's name, unique in its section."""
    clazz: str
    """An alias (``ollama``, ``openai``...) or a class path."""
    type: Language | None = None
    """``java`` for a Java implementation (not available here); unset: Python."""


class MessageRole(str, Enum):
    """The role of a prompt message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class PromptMessage(BaseModel):
    """One message of a prompt template."""

    model_config = _STRICT

    role: MessageRole = MessageRole.USER
    """Who says it (default ``user``)."""
    content: str
    """The template text (``{name}`` placeholders)."""


class PromptSpec(BaseModel):
    """A prompt: a ``text`` template or a list of ``messages``, exactly one of them (and
    not empty)."""

    model_config = _STRICT

    name: str
    text: str | None = None
    messages: list[PromptMessage] | None = None

    @model_validator(mode="after")
    def _one_of_text_or_messages(self) -> PromptSpec:
        if bool(self.text) == bool(self.messages):
            raise ValueError("prompt must define exactly one non-empty 'text' or 'messages'")
        return self


class ToolSpec(BaseModel):
    """A function tool: ``function`` is ``<module>:<qualname>`` (``pkg.tools:add``,
    ``pkg.tools:Tools.add``). ``parameter_types`` is for Java tools only (their
    method's parameter types, in order); ``injected_args`` are parameters the runtime fills
    in (`InjectedArg`: ``{source, key}``), hidden from the model."""

    model_config = _STRICT

    name: str
    function: str | None = None
    type: Language | None = None
    parameter_types: list[str] | None = None
    injected_args: dict[str, InjectedArg] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _injected_args(cls, data: Any) -> Any:
        if isinstance(data, dict) and "injected_args" in data:
            given = data["injected_args"]
            if not isinstance(given, dict):
                raise TypeError(  # upstream's words: its tests match them
                    f"'injected_args' must be a dict of parameter name to {{source, key}}, "
                    f"got {type(given).__name__}"
                )
            data = {**data, "injected_args": normalize_injected_args(given)}
        return data


class PackageSkillSpec(BaseModel):
    """Skills inside an installed Python package: the package and a path in it."""

    model_config = _STRICT

    package: str
    resource: str


class SkillsSpec(BaseModel):
    """A skills resource: directories or ``.zip`` files (``paths``), ``.zip`` URLs
    (``urls``), Java classpath resources (``classpath``, Java only) or package resources
    (``package``); at least one."""

    model_config = _STRICT

    name: str
    paths: list[str] = Field(default_factory=list)
    urls: list[str] = Field(default_factory=list)
    classpath: list[str] = Field(default_factory=list)
    package: list[PackageSkillSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _some_source(self) -> SkillsSpec:
        if not (self.paths or self.urls or self.classpath or self.package):
            raise ValueError(
                f"skills {self.name!r}: at least one of paths/urls/classpath/package must be "
                "non-empty"
            )
        return self


_Trigger = Annotated[str, Field(pattern=r"\S")]


class ActionSpec(BaseModel):
    """An action: its ``function`` (``<module>:<qualname>``) and what triggers it (event
    aliases such as ``input``, or event type names; any one of them triggers it)."""

    model_config = _STRICT

    name: str
    function: str | None = None
    trigger_conditions: list[_Trigger] = Field(min_length=1)
    config: dict[str, Any] | None = None
    """What the action reads through ``ctx.action_config``."""
    type: Language | None = None


class _ResourceLists(BaseModel):
    """The resources an agent declares, and a file shares beside its agents."""

    model_config = _STRICT

    prompts: list[PromptSpec] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    skills: list[SkillsSpec] = Field(default_factory=list)

    chat_model_connections: list[DescriptorSpec] = Field(default_factory=list)
    chat_model_setups: list[DescriptorSpec] = Field(default_factory=list)
    embedding_model_connections: list[DescriptorSpec] = Field(default_factory=list)
    embedding_model_setups: list[DescriptorSpec] = Field(default_factory=list)
    vector_stores: list[DescriptorSpec] = Field(default_factory=list)
    mcp_servers: list[DescriptorSpec] = Field(default_factory=list)


class AgentSpec(_ResourceLists):
    """One agent of ``agents:``: its own resources and actions. An action given as a
    string names a shared action of the file."""

    name: str
    description: str | None = None
    actions: list[ActionSpec | str] = Field(default_factory=list)


class YamlAgentsDocument(_ResourceLists):
    """A whole file: ``agents:`` (optional: a file may hold shared definitions only) and
    the shared resources and actions beside it."""

    agents: list[AgentSpec] = Field(default_factory=list)
    actions: list[ActionSpec] = Field(default_factory=list)


def export() -> str:
    """The JSON Schema of a YAML agent file, as text (for an editor's YAML support)."""
    return json.dumps(YamlAgentsDocument.model_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(export())
