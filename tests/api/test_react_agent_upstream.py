"""`ReActAgent` as upstream documents it: inputs through the prompt, the output-schema
instruction after the first system message, a pydantic model or a `RowTypeInfo` as the
output schema, and `OutputSchema` written as JSON and read back."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from pyflink.common import Row
from pyflink.common.typeinfo import BasicTypeInfo, RowTypeInfo, Types

from flink_agents.api import (
    BaseChatModelSetup,
    ChatMessage,
    FunctionChatModelConnection,
    MessageRole,
    Prompt,
    ReActAgent,
    ResourceDescriptor,
    ResourceType,
    ScriptedChatModelConnection,
)
from flink_agents.api.agents.types import OutputSchema
from flink_agents.runtime.local_runner import LocalExecutionEnvironment


class Score(BaseModel):
    id: str
    score: int


SCORE_ROW = RowTypeInfo(
    [BasicTypeInfo.STRING_TYPE_INFO(), BasicTypeInfo.INT_TYPE_INFO()], ["id", "score"]
)


class Review(BaseModel):
    id: str
    review: str


def run(
    agent: ReActAgent,
    replies: list[Any] | FunctionChatModelConnection,
    inputs: list[Any],
    **config: Any,
) -> tuple[list[Any], FunctionChatModelConnection]:
    """The outputs by input, and the model (its calls in the order of their inputs)."""
    model = (
        replies
        if isinstance(replies, FunctionChatModelConnection)
        else ScriptedChatModelConnection(replies=replies)
    )
    env = LocalExecutionEnvironment({"error-handling-strategy": "ignore", **config})
    env.add_resource("local", ResourceType.CHAT_MODEL_CONNECTION, model)
    records = [{"key": i, "value": value} for i, value in enumerate(inputs)]
    out = env.from_list(records).apply(agent).to_list()
    env.execute()
    by_key = dict(kv for o in out for kv in o.items())
    return [by_key[i] for i in range(len(inputs))], model


def setup() -> ResourceDescriptor:
    return ResourceDescriptor(clazz=BaseChatModelSetup, connection="local")


REVIEW_PROMPT = Prompt.from_messages(
    [
        ChatMessage.system("Rate the review from 1 to 5."),
        ChatMessage.user('"id": {id}, "review": {review}'),
    ]
)


def test_output_schema_is_written_as_json_and_read_back() -> None:
    rows = OutputSchema(output_schema=RowTypeInfo([BasicTypeInfo.INT_TYPE_INFO()], ["result"]))
    text = rows.model_dump_json()
    assert OutputSchema.model_validate_json(text) == rows
    assert '"names":["result"]' in text
    models = OutputSchema(output_schema=Score)
    assert OutputSchema.model_validate_json(models.model_dump_json()).output_schema is Score
    with pytest.raises(TypeError, match="neither a pydantic model class nor a RowTypeInfo"):
        OutputSchema(output_schema=dict)


def test_a_row_type_output_schema_takes_basic_types_only() -> None:
    nested = RowTypeInfo([Types.LIST(Types.STRING())], ["tags"])
    with pytest.raises(TypeError, match="basic types only"):
        ReActAgent(chat_model=setup(), output_schema=nested)
    with pytest.raises(TypeError, match="pydantic model class or a RowTypeInfo"):
        ReActAgent(chat_model=setup(), output_schema="Score")


def test_model_input_fills_the_prompt_and_the_schema_follows_the_system_message() -> None:
    agent = ReActAgent(chat_model=setup(), prompt=REVIEW_PROMPT, output_schema=Score)
    out, model = run(agent, ['{"id": "p1", "score": 4}'], [Review(id="p1", review="fine")])
    assert out == [Score(id="p1", score=4)]
    messages = model.calls[0].messages
    assert [m.role for m in messages] == [MessageRole.SYSTEM, MessageRole.SYSTEM, MessageRole.USER]
    assert messages[0].text == "Rate the review from 1 to 5."
    assert '"required":["id","score"]' in messages[1].text  # the JSON schema
    assert messages[2].text == '"id": p1, "review": fine'


def test_without_a_system_message_the_schema_instruction_comes_first() -> None:
    prompt = Prompt.from_messages([ChatMessage.user("{input}")])
    agent = ReActAgent(chat_model=setup(), prompt=prompt, output_schema=Score)
    out, model = run(agent, ['{"id": "a", "score": 1}'], ["hi"])
    assert out == [Score(id="a", score=1)]
    messages = model.calls[0].messages
    assert [m.role for m in messages] == [MessageRole.SYSTEM, MessageRole.USER]
    assert "JSON schema" in messages[0].text
    assert messages[1].text == "hi"


def test_primitive_inputs_are_their_text_through_input() -> None:
    prompt = Prompt.from_messages([ChatMessage.user("Q: {input}")])
    agent = ReActAgent(chat_model=setup(), prompt=prompt)
    echo = FunctionChatModelConnection(function=lambda messages, tools: messages[-1].text)
    out, _ = run(agent, echo, [42, True, 2.5, None])
    assert out == ["Q: 42", "Q: True", "Q: 2.5", "Q: None"]


def test_row_input_fills_the_prompt_by_field_name() -> None:
    agent = ReActAgent(chat_model=setup(), prompt=REVIEW_PROMPT)
    _, model = run(agent, ["ok"], [Row(id="r9", review="broken box")])
    assert model.calls[0].messages[-1].text == '"id": r9, "review": broken box'


def test_a_row_type_schema_outputs_a_row() -> None:
    agent = ReActAgent(chat_model=setup(), prompt=REVIEW_PROMPT, output_schema=SCORE_ROW)
    answer = 'Here it is:\n```json\n{"id": "p1", "score": 5, "extra": true}\n```'
    out, model = run(agent, [answer], [{"id": "p1", "review": "great"}])
    assert out == [Row(id="p1", score=5)]
    assert isinstance(out[0], Row)
    instruction = model.calls[0].messages[1].text
    assert '"score":{"type":"integer"}' in instruction


def test_an_answer_that_does_not_fit_the_row_is_an_error_record() -> None:
    agent = ReActAgent(chat_model=setup(), output_schema=SCORE_ROW)
    (wrong,), _ = run(agent, ['{"id": "p1", "score": "many"}'], ["x"])
    assert wrong["kind"] == "structured_output"
    assert "score" in wrong["error"]
    (none,), _ = run(agent, ["no json here"], ["y"])
    assert none == {
        "error": "the model's answer does not parse as the output row: it holds no JSON object",
        "kind": "structured_output",
    }


def test_under_the_fail_strategy_a_bad_row_answer_fails_the_run() -> None:
    agent = ReActAgent(chat_model=setup(), output_schema=SCORE_ROW)
    with pytest.raises(Exception, match="does not parse as the output row"):
        run(agent, ["nope"], ["x"], **{"error-handling-strategy": "fail"})
