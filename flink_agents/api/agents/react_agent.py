"""`ReActAgent`: a ready-made agent that answers each input with a tool-calling model
(upstream's class and arguments).

>>> agent = ReActAgent(
...     chat_model=ResourceDescriptor(clazz=..., connection="anthropic", tools=["lookup"]),
...     prompt=Prompt.from_messages([ChatMessage(role=MessageRole.SYSTEM, content="..."),
...                                  ChatMessage(role=MessageRole.USER, content="{id}: {review}")]),
...     output_schema=Review,            # a pydantic model class, or a PyFlink RowTypeInfo
... )

An input becomes the user message(s), as upstream: a primitive (str, int, float, bool,
None) as its text, through the prompt's ``{input}`` when there is a prompt; a dict, a
pydantic model or a PyFlink ``Row`` through the prompt's ``{placeholders}`` (its keys or
fields). Inputs are values agent state keeps, so upstream's plain objects ("pojos") are
refused when they arrive: make them pydantic models. Beyond upstream: without a prompt a
structured input is sent as JSON (upstream refuses it), and a `ChatMessage` or a list of
them (text and media) is sent as it is.

With an output schema, an instruction with its JSON schema follows the first system
message (or comes first), and the answer is parsed: the output is the model instance
(a ``Row`` for a ``RowTypeInfo``). Else the output is the answer's text. A failed request
outputs ``{"error": ..., "kind": ...}`` so the stream goes on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from pydantic import BaseModel

from flink_agents.api.agents.agent import Agent
from flink_agents.api.agents.types import (
    OutputSchema,
    is_row_type_info,
    json_in_text,
    row_from_json,
    row_json_schema,
)
from flink_agents.api.core_options import AgentExecutionOptions, ErrorHandlingStrategy
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.message import ChatMessage, MessageRole, find_first_system_message
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext

__all__ = ["DEFAULT_CHAT_MODEL", "OutputSchema", "ReActAgent"]

DEFAULT_CHAT_MODEL = "_default_chat_model"
"""Resource name of the agent's chat model setup (upstream's)."""
_USER_PROMPT = "_default_user_prompt"
_SCHEMA_PROMPT = "_default_schema_prompt"
_OUTPUT_SCHEMA = "output_schema"
"""The actions' config key holding the `OutputSchema`."""


class ReActAgent(Agent):
    """Answers each input with one chat request; the built-in chat loop runs the tools
    the chat model setup lists until the model answers."""

    def __init__(
        self,
        *,
        chat_model: ResourceDescriptor,
        prompt: Prompt | None = None,
        output_schema: type[BaseModel] | Any | None = None,
    ) -> None:
        """``chat_model``: the chat model setup; ``prompt``: how an input becomes
        messages (see the module doc); ``output_schema``: a pydantic model class or a
        PyFlink ``RowTypeInfo`` of basic types the answer is parsed into (`TypeError`
        for anything else)."""
        super().__init__()
        self.add_resource(DEFAULT_CHAT_MODEL, ResourceType.CHAT_MODEL, chat_model)
        if prompt is not None:
            self.add_resource(_USER_PROMPT, ResourceType.PROMPT, prompt)
        schema: OutputSchema | None = None
        if output_schema is not None:
            if isinstance(output_schema, type) and issubclass(output_schema, BaseModel):
                json_schema = output_schema.model_json_schema()
            elif is_row_type_info(output_schema):
                json_schema = row_json_schema(output_schema)
            else:
                raise TypeError(
                    f"output_schema must be a pydantic model class or a RowTypeInfo, got "
                    f"{type(output_schema).__name__}"
                )
            schema = OutputSchema(output_schema=output_schema)
            instruction = (
                "Give the final response as JSON, with no other text, matching this JSON "
                f"schema: {json.dumps(json_schema, separators=(',', ':'))}"
            )
            self.add_resource(_SCHEMA_PROMPT, ResourceType.PROMPT, Prompt.from_text(instruction))
        self.add_action("start_action", [InputEvent], ReActAgent.start_action, output_schema=schema)
        self.add_action(
            "stop_action", [ChatResponseEvent], ReActAgent.stop_action, output_schema=schema
        )

    @staticmethod
    def start_action(event: Event, ctx: RunnerContext) -> None:
        """Turn the input into messages and send the chat request."""
        value = cast(InputEvent, event).input
        messages = _input_messages(value, _optional_prompt(ctx, _USER_PROMPT))
        schema_prompt = _optional_prompt(ctx, _SCHEMA_PROMPT)
        if schema_prompt is not None:
            instruction = schema_prompt.format_messages(MessageRole.SYSTEM)
            at = find_first_system_message(messages) + 1
            messages = [*messages[:at], *instruction, *messages[at:]]
        schema = _output_schema(ctx)
        model_class = schema if isinstance(schema, type) else None
        ctx.send_event(
            ChatRequestEvent(model=DEFAULT_CHAT_MODEL, messages=messages, output_schema=model_class)
        )

    @staticmethod
    def stop_action(event: Event, ctx: RunnerContext) -> None:
        """Send the answer downstream: the parsed output schema, or the text."""
        response = cast(ChatResponseEvent, event)
        schema = _output_schema(ctx)
        output: Any
        if response.error is not None:
            output = {"error": response.error.message, "kind": response.error.kind}
        elif response.structured_output is not None:
            output = response.structured_output
        else:
            text = response.response.text if response.response is not None else ""
            output = text
            if schema is not None and is_row_type_info(schema):
                output = _row_output(text, schema, ctx)
        ctx.send_event(OutputEvent(output=output))


def _output_schema(ctx: RunnerContext) -> Any:
    schema = ctx.get_action_config_value(_OUTPUT_SCHEMA)
    return schema.output_schema if isinstance(schema, OutputSchema) else None


def _row_output(text: str, row_type: Any, ctx: RunnerContext) -> Any:
    """The answer as a ``Row``; a failure is the run's under the ``fail`` strategy, else
    an error record."""
    problem = "it holds no JSON object"
    for candidate in json_in_text(text):
        if not isinstance(candidate, dict):
            continue
        try:
            return row_from_json(candidate, row_type)
        except ValueError as exc:
            problem = str(exc)
    message = f"the model's answer does not parse as the output row: {problem}"
    if ctx.config.get(AgentExecutionOptions.ERROR_HANDLING_STRATEGY) is ErrorHandlingStrategy.FAIL:
        raise ValueError(message)
    return {"error": message, "kind": "structured_output"}


def _optional_prompt(ctx: RunnerContext, name: str) -> Prompt | None:
    try:
        prompt = ctx.get_resource(name, ResourceType.PROMPT)
    except KeyError:
        return None
    return prompt if isinstance(prompt, Prompt) else None


_PRIMITIVES = (str, int, float, bool, type(None))


def _input_messages(value: Any, prompt: Prompt | None) -> list[ChatMessage]:
    if isinstance(value, ChatMessage):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, ChatMessage) for v in value):
        return list(value)
    if isinstance(value, (*_PRIMITIVES, list, tuple)):
        text = str(value) if isinstance(value, _PRIMITIVES) else json.dumps(value, default=str)
        if prompt is not None:
            return prompt.format_messages(MessageRole.USER, input=text)
        return [ChatMessage.user(text)]
    fields = _fields(value)
    if prompt is not None:
        return prompt.format_messages(MessageRole.USER, **fields)
    return [ChatMessage.user(json.dumps(fields, ensure_ascii=False, default=str))]


def _fields(value: Any) -> dict[str, Any]:
    """The placeholders a structured input fills: a dict's keys, a model's fields, a
    ``Row``'s fields."""
    if isinstance(value, BaseModel):
        data: Any = value.model_dump(mode="json")
    elif isinstance(value, Mapping):
        data = value
    elif callable(getattr(value, "as_dict", None)):  # a PyFlink Row
        data = value.as_dict(recursive=True)
    else:  # no names to fill in
        return {"input": value}
    return {str(k): v for k, v in data.items()}
