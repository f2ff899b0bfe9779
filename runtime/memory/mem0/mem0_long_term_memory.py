"""`Mem0LongTermMemory`: long-term memory on mem0, on the agent's own resources
(upstream's module).

mem0 scopes every memory by three ids; here they are the job (``user_id``: `job_id`), the
key of the input (``agent_id``) and the memory set (``run_id``). A key therefore never
reads, searches or deletes another key's items, by query or by id (an id of another key's
item is not found).

``add`` gives the text to mem0, which asks the chat model for the facts in it and how they
change what the set already holds (add, update, delete), embeds them with the embedding
model and keeps them in the vector store (`flink_agents_mem0_adapters`).

The runtime calls `scoped_call` with the running input's key; the public methods, as
upstream's runner uses them, work on the key `switch_context` set and buffer what they did
for observation (`drain_ltm_observation_records`).
"""

from __future__ import annotations

import functools
import json
import logging
import queue
import threading
from typing import Any

from pydantic import ConfigDict, Field, PrivateAttr
from typing_extensions import override

from flink_agents.api.resource import ResourceType
from flink_agents.runtime.memory.internal_base_long_term_memory import (
    InternalBaseLongTermMemory,
    LongTermOp,
)
from flink_agents.runtime.memory.scoped_operations import (
    ObservationRecord,
    Observe,
    ObservedKind,
    ScopedOperations,
    add_changes,
    as_list,
    item_from_entry,
)

__all__ = ["Mem0LongTermMemory", "add_changes", "item_from_entry"]

_LOG = logging.getLogger(__name__)


def _entry(raw: dict[str, Any]) -> dict[str, Any]:
    """A mem0 result entry as `scoped_call` returns it (JSON only)."""
    return {
        "id": raw.get("id"),
        "memory": raw.get("memory"),
        "score": raw.get("score"),
        "created_at": raw.get("created_at"),
        "updated_at": raw.get("updated_at"),
        "metadata": raw.get("metadata") or None,
    }


class Mem0LongTermMemory(ScopedOperations, InternalBaseLongTermMemory):
    """Long-term memory on mem0: facts distilled by the chat model, found by meaning."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    ctx: Any = Field(exclude=True)
    """Resolves the resources by name (a `RunnerContext`, or the engine)."""
    job_id: str
    """mem0's ``user_id``: the scope of the job's memories."""
    key: str = ""
    """The key the public methods work on (`switch_context`)."""
    chat_model_name: str = ""
    """The chat model setup mem0 extracts facts with."""
    embedding_model_name: str = ""
    """The embedding model setup mem0 embeds with."""
    vector_store_name: str = ""
    """The collection-managing vector store mem0 keeps its items in."""
    metric_group: Any = Field(default=None, exclude=True)
    """Where token usage is counted (``long-term-memory`` under the agent's group)."""
    metric_records: Any = Field(default_factory=queue.Queue, exclude=True)
    """Token usage the chat model reported, counted on the next `switch_context`."""

    _mem0: Any = PrivateAttr(default=None)
    _mem0_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _ltm_observation_records: queue.Queue[tuple[str, str, ObservationRecord]] = PrivateAttr(
        default_factory=queue.Queue
    )
    _update_observation_enabled: bool = PrivateAttr(default=False)
    _get_observation_enabled: bool = PrivateAttr(default=False)
    _search_observation_enabled: bool = PrivateAttr(default=False)
    _observation_id: str = PrivateAttr(default="")
    _observation_suppressed: bool = PrivateAttr(default=False)

    def __init__(
        self,
        *,
        ctx: Any,
        job_id: str,
        chat_model_name: str,
        embedding_model_name: str,
        vector_store_name: str,
    ) -> None:
        group = getattr(ctx, "agent_metric_group", None)
        fields: dict[str, Any] = {
            "ctx": ctx,
            "job_id": job_id,
            "chat_model_name": chat_model_name,
            "embedding_model_name": embedding_model_name,
            "vector_store_name": vector_store_name,
            "metric_group": None if group is None else group.get_sub_group("long-term-memory"),
        }
        super().__init__(**fields)

    # ------------------------------------------------------------------ mem0

    @property
    def _mem0_instance(self) -> Any:
        """mem0's ``Memory``, built on first use from the named resources."""
        if self._mem0 is None:
            with self._mem0_lock:
                if self._mem0 is None:
                    from flink_agents.runtime.memory.mem0.flink_agents_mem0_adapters import (
                        agent_memory,
                    )

                    self._mem0 = agent_memory(
                        self.ctx.get_resource(self.chat_model_name, ResourceType.CHAT_MODEL),
                        self.ctx.get_resource(
                            self.embedding_model_name, ResourceType.EMBEDDING_MODEL
                        ),
                        self.ctx.get_resource(self.vector_store_name, ResourceType.VECTOR_STORE),
                        self.metric_records,
                    )
        return self._mem0

    def _scope(self, key: str, memory_set: str) -> dict[str, str]:
        return {"user_id": self.job_id, "agent_id": key, "run_id": memory_set}

    def _owned(self, key: str, memory_set: str, raw: dict[str, Any] | None) -> bool:
        """Whether the item mem0 returned by id is one of ``key``'s set ``memory_set`` (mem0
        returns an item's scope with it: an item of another key or set is not found)."""
        return raw is not None and all(
            raw.get(name) in (None, value) for name, value in self._scope(key, memory_set).items()
        )

    @override
    def scoped_call(self, key: str, op: LongTermOp, memory_set: str, params: dict[str, Any]) -> Any:
        mem0 = self._mem0_instance
        scope = self._scope(key, memory_set)
        if op == "add":
            items = as_list(params["items"])
            metadatas = params.get("metadatas")
            metadatas = [] if metadatas is None else as_list(metadatas)
            entries: list[dict[str, Any]] = []
            for index, item in enumerate(items):
                metadata = metadatas[index] if index < len(metadatas) else None
                result = mem0.add(messages=item, metadata=metadata, **scope)
                entries.extend(
                    {"id": raw["id"], "event": raw.get("event"), "memory": raw.get("memory")}
                    for raw in result.get("results", [])
                    if "id" in raw
                )
            return entries
        if op == "get":
            ids = params.get("ids")
            if ids is not None:
                found = [mem0.get(memory_id=memory_id) for memory_id in as_list(ids)]
                return [_entry(raw) for raw in found if self._owned(key, memory_set, raw)]
            result = mem0.get_all(
                filters=params.get("filters"), limit=params.get("limit", 100), **scope
            )
            return [_entry(raw) for raw in result.get("results", [])]
        if op == "search":
            result = mem0.search(
                query=params["query"],
                limit=params["limit"],
                filters=params.get("filters"),
                **params.get("kwargs", {}),
                **scope,
            )
            return [_entry(raw) for raw in result.get("results", []) if "id" in raw]
        if op == "delete":
            for memory_id in as_list(params["ids"]):
                if self._owned(key, memory_set, mem0.get(memory_id=memory_id)):
                    mem0.delete(memory_id=memory_id)
            return None
        if op == "delete_set":
            mem0.delete_all(**scope)
            return None
        raise ValueError(f"unknown long-term memory operation {op!r}")

    # ------------------------------------------------------------------ upstream's runner API

    @override
    def configure_observation(
        self,
        *,
        update_observation_enabled: bool,
        get_observation_enabled: bool,
        search_observation_enabled: bool,
    ) -> None:
        self._update_observation_enabled = update_observation_enabled
        self._get_observation_enabled = get_observation_enabled
        self._search_observation_enabled = search_observation_enabled

    @override
    def switch_context(
        self,
        key: str,
        *,
        observation_id: str,
        observation_suppressed: bool = False,
    ) -> None:
        _ = self._mem0_instance
        self._report_token_metrics()
        self.key = key
        self._observation_id = observation_id
        self._observation_suppressed = observation_suppressed

    def _buffer(self, enabled: bool, key: str, action: str, record: ObservationRecord) -> None:
        if not enabled:
            return
        try:
            self._ltm_observation_records.put((key, action, record))
        except Exception:
            _LOG.debug("long-term memory observation not buffered", exc_info=True)

    def drain_ltm_observation_records(self, key: str, observation_id: str) -> str:
        """The buffered records of one key's action, as a JSON array (others stay)."""
        mine: list[ObservationRecord] = []
        others: list[tuple[str, str, ObservationRecord]] = []
        while True:
            try:
                owner_key, owner_id, record = self._ltm_observation_records.get_nowait()
            except queue.Empty:
                break
            if (owner_key, owner_id) == (key, observation_id):
                mine.append(record)
            else:
                others.append((owner_key, owner_id, record))
        for entry in others:
            self._ltm_observation_records.put(entry)
        return json.dumps([record.to_wire() for record in mine], ensure_ascii=False)

    # ------------------------------------------------------------------ BaseLongTermMemory

    @override
    def _scoped(self, op: LongTermOp, memory_set: str, params: dict[str, Any]) -> Any:
        return self.scoped_call(self.key, op, memory_set, params)

    @override
    def _observer(self, kind: ObservedKind) -> Observe:
        enabled = {
            "update": self._update_observation_enabled,
            "get": self._get_observation_enabled,
            "search": self._search_observation_enabled,
        }[kind]
        enabled = enabled and not self._observation_suppressed
        return functools.partial(self._buffer, enabled, self.key, self._observation_id)

    @override
    def close(self) -> None:
        self._report_token_metrics()

    def _report_token_metrics(self) -> None:
        """Count the token usage the chat model reported since the last report."""
        if self.metric_group is None:
            return
        while True:
            try:
                usage = self.metric_records.get_nowait()
            except queue.Empty:
                return
            model = usage.get("model_name")
            prompt, completion = usage.get("promptTokens"), usage.get("completionTokens")
            if model and prompt and completion:
                group = self.metric_group.get_sub_group("model", model)
                group.get_counter("promptTokens").inc(prompt)
                group.get_counter("completionTokens").inc(completion)
