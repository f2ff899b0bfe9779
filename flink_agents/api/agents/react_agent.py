"""`ReActAgent`: a ready-made agent that answers each input with a tool-calling model.

>>> agent = ReActAgent(
...     chat_model=ResourceDescriptor(clazz=..., connection="anthropic", tools=["lookup"]),
...     prompt=Prompt.from_text("Triage this ticket: {subject} / {body}"),
...     output_schema=Triage,
... )

An input becomes the user message: text as it is; a dict or pydantic model through
the prompt's ``{placeholders}`` (or as JSON when there is no prompt); a `ChatMessage`
or a list of them (text and media) as they are. The output is the parsed
``output_schema`` instance, or the answer's text; a failed request outputs
``{"error": ..., "kind": ...}`` so the stream goes on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from pydantic import BaseModel

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext

__all__ = ["ReActAgent"]

DEFAULT_CHAT_MODEL = "_default_chat_model"
"""Resource name of the agent's chat model setup."""
_USER_PROMPT = "_default_user_prompt"
_SCHEMA_PROMPT = "_default_schema_prompt"


class ReActAgent(Agent):
    """Answers each input with one chat request (the built-in loop runs the tools)."""

    def __init__(
        self,
        *,
        chat_model: ResourceDescriptor,
        prompt: Prompt | None = None,
        output_schema: type[BaseModel] | None = None,
    ) -> None:
        super().__init__()
        self.add_resource(DEFAULT_CHAT_MODEL, ResourceType.CHAT_MODEL, chat_model)
        if prompt is not None:
            self.add_resource(_USER_PROMPT, ResourceType.PROMPT, prompt)
        if output_schema is not None:
            if not (isinstance(output_schema, type) and issubclass(output_schema, BaseModel)):
                raise TypeError("output_schema must be a pydantic model class")
            schema = json.dumps(output_schema.model_json_schema(), separators=(",", ":"))
            instruction = (
                "Give your final answer as one JSON object, with no other text, "
                f"matching this JSON schema: {schema}"
            )
            self.add_resource(_SCHEMA_PROMPT, ResourceType.PROMPT, Prompt.from_text(instruction))
        self.add_action(
            "start_action", [InputEvent], ReActAgent.start_action, output_schema=output_schema
        )
        self.add_action("stop_action", [ChatResponseEvent], ReActAgent.stop_action)

    @staticmethod
    def start_action(event: Event, ctx: RunnerContext) -> None:
        """Turn the input into messages and send the chat request."""
        value = cast(InputEvent, event).input
        prompt = _optional_prompt(ctx, _USER_PROMPT)
        messages = _input_messages(value, prompt)
        schema_prompt = _optional_prompt(ctx, _SCHEMA_PROMPT)
        if schema_prompt is not None:
            instruction = schema_prompt.format_messages(MessageRole.SYSTEM)
            at = next(
                (
                    i + 1
                    for i, m in reversed(list(enumerate(messages)))
                    if m.role is MessageRole.SYSTEM
                ),
                0,
            )
            messages = [*messages[:at], *instruction, *messages[at:]]
        ctx.send_event(
            ChatRequestEvent(
                model=DEFAULT_CHAT_MODEL,
                messages=messages,
                output_schema=ctx.get_action_config_value("output_schema"),
            )
        )

    @staticmethod
    def stop_action(event: Event, ctx: RunnerContext) -> None:
        """Send the answer downstream."""
        response = cast(ChatResponseEvent, event)
        if response.error is not None:
            output: Any = {"error": response.error.message, "kind": response.error.kind}
        elif response.structured_output is not None:
            output = response.structured_output
        else:
            output = response.response.text if response.response is not None else ""
        ctx.send_event(OutputEvent(output=output))


def _optional_prompt(ctx: RunnerContext, name: str) -> Prompt | None:
    try:
        prompt = ctx.get_resource(name, ResourceType.PROMPT)
    except KeyError:
        return None
    return prompt if isinstance(prompt, Prompt) else None


def _input_messages(value: Any, prompt: Prompt | None) -> list[ChatMessage]:
    if isinstance(value, ChatMessage):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, ChatMessage) for v in value):
        return list(value)
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, Mapping):
        if prompt is not None:
            return prompt.format_messages(MessageRole.USER, **{str(k): v for k, v in value.items()})
        return [ChatMessage.user(json.dumps(value, ensure_ascii=False, default=str))]
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if prompt is not None:
        return prompt.format_messages(MessageRole.USER, input=text)
    return [ChatMessage.user(text)]
