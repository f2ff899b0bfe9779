"""Chat model resources: the connection (transport) and the setup (model and options)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from pydantic import AliasChoices, Field, field_validator

from flink_agents.api._sync_loop import run_on_sync_loop
from flink_agents.api.chat_models.chat_reply import as_chat_result
from flink_agents.api.chat_models.rate_limit import RequestLimitOptions
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.content_blocks import TextBlock
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.metric_group import MetricGroup
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import Resource, ResourceType
from flink_agents.api.skills import BASH_TOOL, LOAD_SKILL_TOOL, SkillCatalog
from flink_agents.api.tools.tool import BaseTool, ToolMetadata

__all__ = [
    "BaseChatModelConnection",
    "BaseChatModelSetup",
    "StructuredOutputStrategy",
    "ToolSpec",
]

ToolSpec = ToolMetadata | BaseTool
"""What a connection accepts as a tool: its metadata, or the tool itself."""


class StructuredOutputStrategy(str, Enum):
    """How a request's output schema is applied (upstream's policy): through the
    provider's native structured-output API, or by parsing the answer's text.

    No connection here applies a schema natively (`supports_native_structured_output`
    is False), so ``AUTO`` (the default) and ``PROMPT`` parse the text, and ``NATIVE``
    fails the request saying so.
    """

    AUTO = "auto"
    """Native when the connection can for the model, else parse the text."""
    NATIVE = "native"
    """Always native."""
    PROMPT = "prompt"
    """Never native: parse the text."""

    def resolves_to_native(self, model_capable: bool) -> bool:
        """Whether to go native, given whether the connection can for the model."""
        if self is StructuredOutputStrategy.NATIVE:
            return True
        if self is StructuredOutputStrategy.PROMPT:
            return False
        return model_capable

    @classmethod
    def _missing_(cls, value: object) -> StructuredOutputStrategy | None:
        if isinstance(value, str):
            for member in cls:
                if value.lower() in (member.value, member.name.lower()):
                    return member
        return None


class BaseChatModelConnection(Resource, RequestLimitOptions):
    """Talks to one provider API: credentials, endpoint, client.

    Subclasses implement `achat` (preferred) or `chat`; the base gives the other.
    Both return a `ChatResult` whose message is the assistant's reply.

    Calls through a chat model setup (the built-in chat action, ``model.chat(...)``) wait
    for the connection's limits (`RequestLimitOptions`, kept by the runtime): at most
    ``max_concurrent_requests`` at once, ``requests_per_second``, ``tokens_per_minute``;
    with ``adaptive_limit`` the concurrency adapts to the provider's 429/529 answers and
    their ``retry-after``. The limits hold per connection object, which the runtime makes
    once per local runner and once per Flink subtask.
    """

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.CHAT_MODEL_CONNECTION

    def supports_native_structured_output(self, effective_model: str | None) -> bool:
        """Whether this connection applies an output schema natively for that model
        (upstream's capability check). None here does."""
        return False

    def _reject_unsupported_output_schema(self, output_schema: Any) -> None:
        """Upstream's guard, for connections written to its contract (``chat(messages,
        tools=None, output_schema=None, **kwargs)`` calls it first): `NotImplementedError`
        for a schema, nothing for None. The chat action here passes no ``output_schema``:
        it parses the answer's text itself."""
        if output_schema is None:
            return
        cls = type(self)
        raise NotImplementedError(
            f"{cls.__module__}.{cls.__qualname__} has no native structured-output translation, "
            "so it cannot honor the given output schema. Override chat() to translate the "
            "schema natively, or pass no schema so the caller applies the prompt-engineering "
            "fallback."
        )

    def _overrides(self, name: str) -> bool:
        return getattr(type(self), name) is not getattr(BaseChatModelConnection, name)

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """Send the conversation, return the model's answer (blocking)."""
        if not self._overrides("achat"):
            raise NotImplementedError(f"{type(self).__name__} implements neither chat nor achat")
        return run_on_sync_loop(self.achat(messages, tools, **params))

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """Send the conversation, return the model's answer (non-blocking)."""
        if not self._overrides("chat"):
            raise NotImplementedError(f"{type(self).__name__} implements neither chat nor achat")
        return await asyncio.to_thread(self.chat, messages, tools, **params)


class BaseChatModelSetup(Resource):
    """Which model to use and how: refers to a connection by name.

    ``model_kwargs`` are passed to the connection on every call; provider setups
    add typed fields (``max_tokens``, ``temperature``...) and extend it.

    `chat` (blocking) and `achat` send a conversation the way the built-in chat action
    does: the prompt first (filled from ``prompt_args``), then the messages, to the
    connection with the setup's tools and parameters. A setup may override either one
    (a sync ``chat`` as in the upstream API, or an ``async def achat``): the other
    then goes through it, and so does the built-in chat action.

    >>> model = ctx.get_resource("triage_model", ResourceType.CHAT_MODEL)
    >>> answer = model.chat([ChatMessage.user("hi")]).message.text
    """

    connection: str
    """Name of the `BaseChatModelConnection` resource to send through."""
    model: str | None = None
    """The provider's model name."""
    prompt: Prompt | str | None = None
    """A `Prompt` (or the name of a prompt resource) put before the messages of each call."""
    tools: list[str] = Field(default_factory=list)
    """Names of the tool resources the model may call."""
    params: dict[str, Any] = Field(
        default_factory=dict, validation_alias=AliasChoices("params", "additional_kwargs")
    )
    """Extra provider parameters, passed through (also accepted as ``additional_kwargs``,
    the upstream project's name). Only these pass through: any other keyword that is
    not a field raises `UnknownOptionError`."""
    structured_output_strategy: StructuredOutputStrategy = StructuredOutputStrategy.AUTO
    """How an output schema is applied (upstream's option; None means ``AUTO``)."""
    skills: list[str] | None = None
    """Names of the agent's skills this model is told of (`flink_agents.api.skills`): a
    system message after the prompt's first lists them, and the built-in ``load_skill``
    and ``bash`` tools join ``tools`` (docs/skills.md)."""
    skill_discovery_prompt: str | None = None
    """The system message that lists ``skills`` (set when the setup is opened)."""
    allowed_commands: list[str] = Field(default_factory=list)
    """Commands the ``bash`` tool may run for this model (with ``skills.commands.enabled``)."""
    allowed_script_dirs: list[str] = Field(default_factory=list)
    """Folders, besides its skills' own, whose scripts the ``bash`` tool may run."""

    @field_validator("structured_output_strategy", mode="before")
    @classmethod
    def _null_strategy_is_auto(cls, value: Any) -> Any:
        return StructuredOutputStrategy.AUTO if value is None else value

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.CHAT_MODEL

    def open(self) -> None:
        """With ``skills``: the built-in ``load_skill`` and ``bash`` tools join ``tools``
        and ``skill_discovery_prompt`` lists the skills (`ValueError` for one the agent
        does not have)."""
        if self.skills is None:
            return
        for name in (LOAD_SKILL_TOOL, BASH_TOOL):
            if name not in self.tools:
                self.tools.append(name)
        try:
            catalog = self._resource(LOAD_SKILL_TOOL, ResourceType.TOOL)
        except KeyError:
            raise ValueError(
                f"this chat model setup has skills={self.skills}, but its agent declares "
                "no skills: declare where they come from (@skills, or a ResourceType.SKILLS "
                "resource on the environment)"
            ) from None
        if not isinstance(catalog, SkillCatalog):
            raise TypeError(f"the tool {LOAD_SKILL_TOOL!r} is not the built-in skills tool")
        self.skill_discovery_prompt = catalog.discovery_prompt(self.skills)

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """Parameters for the connection: the model name and any extras."""
        kwargs: dict[str, Any] = {}
        if self.model is not None:
            kwargs["model"] = self.model
        kwargs.update(self.params)
        return kwargs

    def _record_token_metrics(
        self,
        model_name: str,
        prompt_tokens: int,
        completion_tokens: int,
        metric_group: MetricGroup | None,
    ) -> None:
        """Count a call's tokens in ``metric_group`` (the group read when the request
        started; None: not counted): ``model.<model_name>`` ``promptTokens`` and
        ``completionTokens``, as upstream. The built-in chat action calls it once per
        model call with the action's metric group."""
        if metric_group is None:
            return
        model_group = metric_group.get_sub_group("model", model_name)
        model_group.get_counter("promptTokens").inc(prompt_tokens)
        model_group.get_counter("completionTokens").inc(completion_tokens)

    def check_structured_output(self) -> None:
        """Raise `ValueError` when this setup's ``structured_output_strategy`` asks for
        native structured output, which no connection here gives (the chat action calls
        this for a request with an output schema)."""
        strategy = self.structured_output_strategy
        if strategy is StructuredOutputStrategy.PROMPT:
            return
        try:
            capable = self.resolve_connection().supports_native_structured_output(self.model)
        except (KeyError, TypeError, RuntimeError):  # a setup with a chat of its own
            capable = False
        if strategy.resolves_to_native(capable):
            raise ValueError(
                f"structured_output_strategy {strategy.name}: no connection here applies an "
                "output schema natively; use AUTO (the default) or PROMPT, and the answer's "
                "text is parsed into the schema"
            )

    def overrides_chat(self) -> bool:
        """Whether this setup's class overrides `chat` or `achat` (what it sends is then
        its own business, not only `apply_prompt`'s and the connection's)."""
        cls = type(self)
        return cls.chat is not BaseChatModelSetup.chat or cls.achat is not BaseChatModelSetup.achat

    def chat(
        self,
        messages: Sequence[ChatMessage],
        prompt_args: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """Send the conversation and return the model's answer (blocking).

        ``prompt_args`` fill the prompt's placeholders; ``kwargs`` are provider
        parameters that override ``model_kwargs`` for this call. From an ``async def``
        action, ``await achat(...)`` instead: this call blocks its thread.
        """
        if type(self).achat is not BaseChatModelSetup.achat:
            return run_on_sync_loop(self.achat(messages, **_with_prompt_args(prompt_args, kwargs)))
        return run_on_sync_loop(self._send(messages, prompt_args, kwargs))

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        prompt_args: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """`chat` without blocking: ``await model.achat(messages, prompt_args)``."""
        if type(self).chat is not BaseChatModelSetup.chat:
            return as_chat_result(
                await asyncio.to_thread(
                    self.chat, messages, **_with_prompt_args(prompt_args, kwargs)
                ),
                model=self.model,
            )
        return await self._send(messages, prompt_args, kwargs)

    def apply_prompt(
        self, messages: Sequence[ChatMessage], prompt_args: Mapping[str, Any] | None = None
    ) -> list[ChatMessage]:
        """The messages a call sends: without a prompt, ``messages`` as they are; with
        one, the prompt's messages filled from ``prompt_args``, then those of
        ``messages`` that have something to say (a user or system message with no
        content, such as ``ChatMessage(role=USER)`` sent only to carry ``prompt_args``,
        is left out; assistant and tool messages always stay)."""
        prompt = self.resolve_prompt()
        if prompt is None:
            return self._with_skills(messages)
        return self._with_skills(
            _after_prompt(prompt.format_messages(**dict(prompt_args or {})), messages)
        )

    async def aapply_prompt(
        self, messages: Sequence[ChatMessage], prompt_args: Mapping[str, Any] | None = None
    ) -> list[ChatMessage]:
        """`apply_prompt` for async code: the prompt is filled with
        `Prompt.aformat_messages`, so one whose rendering waits (an MCP prompt) does not
        hold the caller's event loop. `achat`, `chat` and the built-in chat action send
        through this."""
        prompt = self.resolve_prompt()
        if prompt is None:
            return self._with_skills(messages)
        return self._with_skills(
            _after_prompt(await prompt.aformat_messages(**dict(prompt_args or {})), messages)
        )

    def _with_skills(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        """``messages`` with the skills' system message after the first system message
        (first when there is none), as upstream places it; as they are without skills."""
        listing = self.skill_discovery_prompt
        if self.skills is None or not listing:
            return list(messages)
        first = next((i for i, m in enumerate(messages) if m.role is MessageRole.SYSTEM), -1)
        sent = list(messages)
        sent.insert(first + 1, ChatMessage.system(listing))
        return sent

    def resolve_prompt(self) -> Prompt | None:
        """The prompt, looked up by name when it was given as one."""
        prompt = self.prompt
        if isinstance(prompt, str):
            prompt = self._resource(prompt, ResourceType.PROMPT)
        if prompt is not None and not isinstance(prompt, Prompt):
            raise TypeError(
                f"the prompt of this chat model is a {type(prompt).__name__}, not a Prompt"
            )
        return prompt

    def resolve_connection(self) -> BaseChatModelConnection:
        """The connection resource this setup sends through."""
        connection = self._resource(self.connection, ResourceType.CHAT_MODEL_CONNECTION)
        if not isinstance(connection, BaseChatModelConnection):
            raise TypeError(f"resource {self.connection!r} is not a chat model connection")
        return connection

    def resolve_tools(self) -> list[BaseTool]:
        """The tool resources named in ``tools``, in order."""
        tools: list[BaseTool] = []
        for name in self.tools:
            tool = self._resource(name, ResourceType.TOOL)
            if not isinstance(tool, BaseTool):
                raise TypeError(f"tool {name!r} is a {type(tool).__name__}, not a tool")
            tools.append(tool)
        return tools

    async def _send(
        self,
        messages: Sequence[ChatMessage],
        prompt_args: Mapping[str, Any] | None,
        kwargs: Mapping[str, Any],
    ) -> ChatResult:
        if (
            self.prompt is None
            and self.skills is None
            and type(self).aapply_prompt is BaseChatModelSetup.aapply_prompt
        ):
            sent = list(messages)  # no prompt: as they are (no coroutine on every call)
        else:
            sent = await self.aapply_prompt(messages, prompt_args)
        params = {**self.model_kwargs, **kwargs}
        connection = self.resolve_connection()
        tools = self.resolve_tools()
        gate = connection.request_gate
        if gate is None:
            return await connection.achat(sent, tools, **params)
        return await gate.send_chat(
            sent, tools, params, lambda: connection.achat(sent, tools, **params)
        )

    def _resource(self, name: str, resource_type: ResourceType) -> Resource:
        if self.get_resource is None:
            raise RuntimeError(
                f"{type(self).__name__} cannot look up its {resource_type.value} {name!r}: "
                "use the setup an agent gives you (ctx.get_resource(name, "
                "ResourceType.CHAT_MODEL)), or pass get_resource= when you build it"
            )
        return self.get_resource(name, resource_type)


def _with_prompt_args(
    prompt_args: Mapping[str, Any] | None, kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """Keyword arguments for an overriding ``chat``/``achat``: ``prompt_args`` only when
    given, so an override whose signature has no such parameter still works."""
    if prompt_args is None:
        return dict(kwargs)
    return {"prompt_args": prompt_args, **kwargs}


def _after_prompt(
    formatted: list[ChatMessage], messages: Sequence[ChatMessage]
) -> list[ChatMessage]:
    """The prompt's messages, then those of ``messages`` that have something to say."""
    return [*formatted, *(m for m in messages if not _is_empty(m))]


def _is_empty(message: ChatMessage) -> bool:
    """A user or system message with no content: no blocks, or only empty texts."""
    if message.role is MessageRole.ASSISTANT or message.role is MessageRole.TOOL:
        return False
    return all(isinstance(b, TextBlock) and not b.text for b in message.blocks)
