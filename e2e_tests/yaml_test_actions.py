"""Upstream's ``yaml_test_actions`` (its e2e YAML agent's actions and tool, as upstream
wrote them), with the offline model the YAML files here connect to instead of Ollama.

``resources/yaml_test_agent.yaml`` and ``resources/yaml_multi_agent.yaml`` are upstream's
files with two changes: the functions are named in this module, and the chat model
connection is `OfflineChatModelConnection` (the setups stay upstream's ``clazz: ollama``
with ``model: qwen3:1.7b``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field
from pyflink.datastream import KeySelector

from flink_agents.api.chat_message import ChatMessage, MessageRole, ToolCallBlock
from flink_agents.api.chat_models.function_model import ChatFunction, FunctionChatModelConnection
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.tool import ToolMetadata


class YamlChatInput(BaseModel):
    """Input record: a question routed to a chat model."""

    id: int
    text: str


class YamlChatOutput(BaseModel):
    """Output record: the chat model's textual answer."""

    id: int
    answer: str


class YamlChatKeySelector(KeySelector):
    """Keys `YamlChatInput` and `YamlChatOutput` records by their ``id``."""

    def get_key(self, value: YamlChatInput | YamlChatOutput) -> int:  # pyright: ignore[reportIncompatibleMethodOverride]
        return value.id


def add(a: int, b: int) -> int:
    """Calculate the sum of a and b.

    Parameters
    ----------
    a : int
        The first operand
    b : int
        The second operand

    Returns:
    -------
    int:
        The sum of a and b
    """
    return a + b


def process_input(event: Event, ctx: RunnerContext) -> None:
    """Route the text to the math model (it has the ``add`` tool) or the creative one."""
    data = YamlChatInput.model_validate(InputEvent.from_event(event).input)
    ctx.short_term_memory.set("input_id", data.id)
    lower = data.text.lower()
    model_name = (
        "math_chat_model" if ("calculate" in lower or "sum" in lower) else "creative_chat_model"
    )
    ctx.send_event(
        ChatRequestEvent(
            model=model_name, messages=[ChatMessage(role=MessageRole.USER, content=data.text)]
        )
    )


def chat_request(event: Event, ctx: RunnerContext) -> None:
    """Send the input text to the agent's own ``chat_model`` (the multi-agent file)."""
    data = YamlChatInput.model_validate(InputEvent.from_event(event).input)
    ctx.short_term_memory.set("input_id", data.id)
    ctx.send_event(
        ChatRequestEvent(
            model="chat_model", messages=[ChatMessage(role=MessageRole.USER, content=data.text)]
        )
    )


def process_chat_response(event: Event, ctx: RunnerContext) -> None:
    """Emit the model's text, tagged with the input's id."""
    response = ChatResponseEvent.from_event(event).response
    if not response or not response.content:
        return
    input_id = ctx.short_term_memory.get("input_id")
    ctx.send_event(OutputEvent(output=YamlChatOutput(id=input_id, answer=response.content)))


def commentary_request(event: Event, ctx: RunnerContext) -> None:
    """Stage 2: ask a second model to restate the first one's answer."""
    data = YamlChatOutput.model_validate(InputEvent.from_event(event).input)
    ctx.short_term_memory.set("input_id", data.id)
    ctx.send_event(
        ChatRequestEvent(
            model="chat_model",
            messages=[
                ChatMessage(
                    role=MessageRole.USER,
                    content=(
                        "Here is a math answer from another assistant: "
                        f"{data.answer!r}. Reply with the numeric result only."
                    ),
                )
            ],
        )
    )


def offline_model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    """Stands in for qwen3:1.7b: a sum it is asked for goes through the ``add`` tool when
    offered, a request for the numeric result only gets the last number, anything else a
    joke about cats."""
    results = [m.content for m in messages if m.role is MessageRole.TOOL]
    if results:
        return f"The sum is {results[-1]}."
    user = next(m.content for m in reversed(messages) if m.role is MessageRole.USER)
    numbers = re.findall(r"-?\d+", user)
    if "numeric result only" in user and numbers:
        return numbers[-1]
    if any(t.name == "add" for t in tools) and len(numbers) >= 2:
        call = ToolCallBlock(
            id="call-add", name="add", input={"a": int(numbers[0]), "b": int(numbers[1])}
        )
        return ChatMessage.assistant(tool_calls=[call])
    return "Why did the cat sit on the computer? To keep an eye on the mouse."


class OfflineChatModelConnection(FunctionChatModelConnection):
    """`offline_model` as a connection a YAML file names by class path."""

    function: ChatFunction | None = Field(default=offline_model, exclude=True)
    request_timeout: float = 240.0
    """Upstream's Ollama connection option, kept so the YAML is upstream's."""
