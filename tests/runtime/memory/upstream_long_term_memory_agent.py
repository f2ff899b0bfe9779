"""Upstream's long-term memory e2e agent (``e2e_tests_integration/long_term_memory_test.py``
of Apache Flink Agents), with only its model connections changed: the chat model and the
embedding model are the fake OpenAI-compatible server of `memory_model_server`
(``LTM_E2E_BASE_URL``) instead of DashScope and Ollama. Its actions, events, records and
store are upstream's."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any, ClassVar

from pydantic import BaseModel
from typing_extensions import override

from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import (
    action,
    chat_model_connection,
    chat_model_setup,
    embedding_model_connection,
    embedding_model_setup,
    vector_store,
)
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.events.event_type import EventType
from flink_agents.api.memory.long_term_memory import MemorySetItem
from flink_agents.api.resource import ResourceDescriptor, ResourceName
from flink_agents.api.runner_context import RunnerContext

CHROMADB_PATH_ENV = "MEM0_LTM_E2E_CHROMADB_PATH"
BASE_URL_ENV = "LTM_E2E_BASE_URL"


class ItemData(BaseModel):
    name: str
    fact: str


class Record(BaseModel):
    name: str
    count: int
    timestamp_before_add: str
    timestamp_after_add: str
    timestamp_second_action: str | None = None
    items: list[MemorySetItem] | None = None


class MyEvent(Event):
    EVENT_TYPE: ClassVar[str] = "_my_event"

    def __init__(self, value: Any) -> None:
        super().__init__(type=MyEvent.EVENT_TYPE, attributes={"value": value})

    @classmethod
    @override
    def from_event(cls, event: Event) -> MyEvent:
        assert "value" in event.attributes
        result = cls(value=Record.model_validate(event.attributes["value"]))
        return result.reconstruct_from(event)

    @property
    def value(self) -> Any:
        return self.attributes["value"]


class LongTermMemoryAgent(Agent):
    """Agent used for testing long term memory."""

    @chat_model_connection
    @staticmethod
    def openai_connection() -> ResourceDescriptor:
        # Changed: the fake server, not DashScope.
        return ResourceDescriptor(
            clazz=ResourceName.ChatModel.OPENAI_COMPLETIONS_CONNECTION,
            api_key="test-key",
            base_url=os.environ[BASE_URL_ENV],
            timeout=300,
        )

    @chat_model_setup
    @staticmethod
    def ollama_qwen3() -> ResourceDescriptor:
        # Changed: the fake server's model (upstream's extract_reasoning/think are its
        # DashScope model's parameters).
        return ResourceDescriptor(
            clazz=ResourceName.ChatModel.OPENAI_COMPLETIONS_SETUP,
            connection="openai_connection",
            model="fake-chat",
        )

    @embedding_model_connection
    @staticmethod
    def ollama_embedding_connection() -> ResourceDescriptor:
        # Changed: the fake server's /embeddings, not Ollama.
        return ResourceDescriptor(
            clazz=ResourceName.EmbeddingModel.OPENAI_CONNECTION,
            api_key="test-key",
            base_url=os.environ[BASE_URL_ENV],
        )

    @embedding_model_setup
    @staticmethod
    def ollama_nomic_embed_text() -> ResourceDescriptor:
        # Changed: the setup of that connection.
        return ResourceDescriptor(
            clazz=ResourceName.EmbeddingModel.OPENAI_SETUP,
            connection="ollama_embedding_connection",
            model="fake-embed",
        )

    @vector_store
    @staticmethod
    def chroma_ltm_store() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ResourceName.VectorStore.CHROMA_VECTOR_STORE,
            embedding_model="ollama_nomic_embed_text",
            persist_directory=os.environ[CHROMADB_PATH_ENV],
            collection="context",
        )

    @action(EventType.InputEvent)
    @staticmethod
    async def add_items(event: Event, ctx: RunnerContext) -> None:
        input_data = ItemData.model_validate(InputEvent.from_event(event).input)
        ltm = ctx.long_term_memory

        timestamp_before_add = datetime.now(timezone.utc).isoformat()
        memory_set = ltm.get_memory_set(name="test_ltm")
        await ctx.durable_execute_async(memory_set.add, items=f"{input_data.fact}")
        timestamp_after_add = datetime.now(timezone.utc).isoformat()

        stm = ctx.short_term_memory
        count = stm.get("count") or 1
        stm.set("count", count + 1)

        ctx.send_event(
            MyEvent(
                value=Record(
                    name=input_data.name,
                    count=count,
                    timestamp_before_add=timestamp_before_add,
                    timestamp_after_add=timestamp_after_add,
                )
            )
        )

    @action(MyEvent.EVENT_TYPE)
    @staticmethod
    async def retrieve_items(event: Event, ctx: RunnerContext) -> None:
        record: Record = MyEvent.from_event(event).value
        record.timestamp_second_action = datetime.now(timezone.utc).isoformat()
        memory_set = ctx.long_term_memory.get_memory_set(name="test_ltm")
        items = await ctx.durable_execute_async(memory_set.get)
        if (record.name == "alice" and record.count == 2) or (
            record.name == "bob" and record.count == 2
        ):
            record.items = items
        ctx.send_event(OutputEvent(output=record))


INPUT = [
    {"name": "alice", "fact": "My favorite fruit is watermelon."},
    {"name": "bob", "fact": "I like swimming."},
    {"name": "bob", "fact": "I'm a vegetarian and allergic to nuts."},
    {"name": "alice", "fact": "My favorite fruit is bananas."},
]
"""Upstream's ``resources/long_term_memory_test/input.txt``."""


def check_result(actual_result: list[Record]) -> None:
    """Upstream's checks of the records the job wrote."""
    records = {f"{record.name}.{record.count}": record for record in actual_result}
    assert "alice.2" in records, f"missing alice.2; got {sorted(records)}"
    assert "bob.2" in records, f"missing bob.2; got {sorted(records)}"
    items = records["alice.2"].items
    values = [item.value for item in items or []]
    bob_values = [item.value for item in records["bob.2"].items or []]
    assert bob_values, f"bob's memory set is empty (alice's set: {values})"
    bob_leaked = [v for v in bob_values if "watermelon" in v.lower() or "bananas" in v.lower()]
    assert not bob_leaked, f"bob's set contains alice's facts: {bob_values}"
    assert values, f"alice's memory set is empty (bob's set: {bob_values})"
    assert any("bananas" in value.lower() for value in values), values
    leaked = [v for v in values if "swimming" in v.lower() or "vegetarian" in v.lower()]
    assert not leaked, f"alice's set contains bob's facts: {values}"
    assert all(item.created_at and item.updated_at for item in items or [])
    assert datetime.fromisoformat(records["alice.1"].timestamp_before_add) < datetime.fromisoformat(
        records["bob.1"].timestamp_after_add
    )
