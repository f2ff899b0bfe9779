"""The action-state store on Kafka: durable-call records on a compacted topic.

Install with the ``kafka`` extra (``pip install 'pyflink-agents[kafka]'``, confluent-kafka).
confluent-kafka is imported when the store first connects, so this module imports without it.

How records map onto the topic. Each record is one message whose key is the record's
primary key (pipeline, agent key, seq, step, action, call index) as compact JSON, and whose
value is its digest, status and payload as JSON (the payload sealed when encryption is on,
as in the SQL stores). A record is replaced by a new message with the same key and deleted
by a tombstone (a null value); the topic is compacted (``cleanup.policy=compact``), so Kafka
keeps the latest message of each key and drops tombstoned keys, and the topic's size follows
the live records.

All records of one run key go to one partition (a hash of pipeline and key), so a run is
caught up with by reading one partition.

Reading. When the store connects it reads the whole topic to its end into memory (the
records of its pipeline; the others it only notes, to refuse a topic another pipeline
uses). Before each operation it reads the partition of the run key(s) concerned up to its
current end (their end offsets asked with one request), then answers from memory: what any
store wrote to the run before is seen, as in the SQL stores. Every write goes to the topic
first (idempotent producer, ``acks=all``, flushed and its delivery confirmed) and to memory
only once Kafka has acknowledged it. A write that fails or is not confirmed drops the
in-memory view and the clients: the next operation reads the topic again.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import re
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

from flink_agents.runtime.durable._rows import Row, outcome_to_columns, record_from_row
from flink_agents.runtime.durable.cipher import PayloadCipher
from flink_agents.runtime.durable.pipeline import (
    DEFAULT_PIPELINE,
    check_pipeline_id,
    foreign_pipeline_error,
)
from flink_agents.runtime.durable.records import CallOutcome, CallRecord, DurableCallKey
from flink_agents.runtime.durable.store import ClientStore
from flink_agents.runtime.errors import DurableStoreError, DurableStoreUnavailableError

__all__ = ["KafkaActionStateStore"]

T = TypeVar("T")

_LOG = logging.getLogger(__name__)

_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")

_TOPIC_OPTION: Final = "kafkaActionStateTopic"

Position = tuple[int, str, int]
"""``(step, action, call_index)``: where a record sits within its run."""

Stored = tuple[str, str, "str | None"]
"""``(digest, status, payload)`` of a record, as written."""

Runs = dict[str, dict[int, dict[Position, Stored]]]
"""The pipeline's records in memory: agent key -> seq -> position -> stored record."""


def _import_kafka() -> Any:
    try:
        import confluent_kafka  # pyright: ignore[reportMissingImports]
    except ImportError:
        raise DurableStoreError(
            "the Kafka action-state store needs confluent-kafka: "
            "pip install 'pyflink-agents[kafka]' (or 'confluent-kafka')"
        ) from None
    return confluent_kafka


def check_topic_name(topic: str) -> str:
    """The topic name if Kafka accepts it (letters, digits, ``.``, ``_``, ``-``), else
    :class:`ValueError`."""
    if not isinstance(topic, str) or not _TOPIC_NAME.match(topic) or topic in (".", ".."):
        raise ValueError(
            f"{_TOPIC_OPTION} must be a Kafka topic name (letters, digits, '.', '_', '-'; "
            f"at most 249), not {topic!r}"
        )
    return topic


def _message_key(pipeline: str, agent_key: str, seq: int, position: Position) -> bytes:
    step, action, call_index = position
    fields = [pipeline, agent_key, seq, step, action, call_index]
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _message_value(digest: str, status: str, payload: str | None) -> bytes:
    value = {"digest": digest, "status": status, "payload": payload}
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _parse_key(raw: bytes | None) -> tuple[str, str, int, Position] | None:
    """``(pipeline, agent_key, seq, position)`` of a message key, or None if not ours."""
    try:
        fields = json.loads(raw or b"")
    except ValueError:
        return None
    if not isinstance(fields, list) or len(fields) != 6:  # pyright: ignore[reportUnknownArgumentType]
        return None
    pipeline, agent_key, seq, step, action, call_index = fields  # pyright: ignore[reportUnknownVariableType]
    texts = all(isinstance(field, str) for field in (pipeline, agent_key, action))
    numbers = all(type(field) is int for field in (seq, step, call_index))
    if not (texts and numbers):
        return None
    return pipeline, agent_key, seq, (step, action, call_index)  # pyright: ignore[reportUnknownVariableType]


def _parse_value(raw: bytes) -> Stored | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    digest, status, payload = value.get("digest"), value.get("status"), value.get("payload")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(digest, str) or status not in ("pending", "value", "error"):
        return None
    if payload is not None and not isinstance(payload, str):
        return None
    return digest, status, payload  # pyright: ignore[reportUnknownVariableType, reportReturnType]


def _later(runs: Runs, key: DurableCallKey) -> list[Position]:
    """Positions of the record at ``key`` and the later ones of its run (see ``drop_from``)."""
    run = runs.get(key.agent_key, {}).get(key.seq, {})
    return [
        (step, action, call_index)
        for step, action, call_index in run
        if step > key.step
        or (step == key.step and action == key.action and call_index >= key.call_index)
    ]


class KafkaActionStateStore(ClientStore):
    """Records on one compacted Kafka topic, created if missing.

    ``bootstrap_servers`` is the Kafka bootstrap list (``host:9092,host2:9092``); ``topic``
    the topic (``kafkaActionStateTopic``), created with ``num_partitions`` partitions,
    ``replication_factor`` replicas and ``cleanup.policy=compact`` when it does not exist; an
    existing topic that is not compacted is refused. Each write returns once every message
    it made is acknowledged by all in-sync replicas (idempotent producer, ``acks=all``):
    durable as far as the topic's replication makes it (use a replication factor of 3 and
    ``min.insync.replicas=2`` in production; Kafka does not fsync each write).

    The store reads the whole topic into memory when it connects (the first operation, and
    the first after :meth:`close`), and before each operation the run key's partition up
    to its end, so it sees every record any store wrote to the run before. Memory holds the
    pipeline's live records: pruning after checkpoints keeps it to the runs since the last
    completed checkpoint. Operations of one store run one at a time.

    Records are scoped to ``pipeline``, as in the SQL stores: the store refuses
    (:class:`DurableStoreError`) a topic with live records of another pipeline unless
    ``shared`` is true, and a topic with messages it did not write. A broker that cannot
    be reached within ``timeout_s`` raises :class:`DurableStoreUnavailableError` (the
    durable-call log tries again); a refused topic, a denied ACL or a bad configuration
    raises :class:`DurableStoreError`.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        *,
        num_partitions: int = 64,
        replication_factor: int = 1,
        pipeline: str = DEFAULT_PIPELINE,
        shared: bool = False,
        encryption_key_env: str | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        if not bootstrap_servers or not bootstrap_servers.strip():
            raise ValueError("kafkaBootstrapServers must name at least one broker (host:port)")
        if num_partitions < 1 or replication_factor < 1:
            raise ValueError("the topic needs at least one partition and one replica")
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self.bootstrap_servers = bootstrap_servers
        self.topic = check_topic_name(topic)
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.pipeline = check_pipeline_id(pipeline)
        self.shared = shared
        self.encryption_key_env = encryption_key_env
        self.timeout_s = timeout_s
        self._init_runtime_state()

    def _init_runtime_state(self) -> None:
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._producer: Any = None
        self._admin: Any = None
        self._consumer: Any = None
        """Assigned to every partition, positioned after what ``_runs`` holds."""
        self._partitions = 0
        self._next_offsets: dict[int, int] = {}
        """Per partition, the offset of the next message ``_runs`` has not seen."""
        self._runs: Runs | None = None
        """The pipeline's records, once the topic was read (None: read it first)."""
        key_env = self.encryption_key_env
        self._cipher = PayloadCipher(key_env) if key_env else None

    # -- pickling: ship the configuration, never the clients --------------------------------

    _CONFIG = (
        "bootstrap_servers",
        "topic",
        "num_partitions",
        "replication_factor",
        "pipeline",
        "shared",
        "encryption_key_env",
        "timeout_s",
    )

    def __repr__(self) -> str:
        return (
            f"KafkaActionStateStore({self.bootstrap_servers!r}, topic={self.topic!r}, "
            f"pipeline={self.pipeline!r})"
        )

    def _where(self) -> str:
        return f"Kafka action-state store {self.bootstrap_servers} topic {self.topic}"

    # -- clients ---------------------------------------------------------------------------

    def _common_config(self) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": "flink-agents-durable",
            "socket.timeout.ms": max(1000, int(self.timeout_s * 1000)),
            # A metadata request must never create the topic with the broker's defaults
            # (not compacted): the store creates it.
            "allow.auto.create.topics": False,
            "logger": _LOG,
        }

    def _new_producer(self) -> Any:
        kafka = _import_kafka()
        return kafka.Producer(
            {
                **self._common_config(),
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 0,
                "message.timeout.ms": max(1000, int(self.timeout_s * 1000)),
                # The Java client's partitioner: a key always lands on the same partition.
                "partitioner": "murmur2_random",
            }
        )

    def _ensure_topic(self, admin: Any) -> None:
        """Create the compacted topic if it is missing; refuse one that is not compacted."""
        kafka = _import_kafka()
        kafka_admin: Any = importlib.import_module("confluent_kafka.admin")
        metadata = admin.list_topics(topic=self.topic, timeout=self.timeout_s)
        found = metadata.topics.get(self.topic)
        error = None if found is None else found.error
        if found is None or error is not None:
            if error is not None and error.code() != kafka.KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise kafka.KafkaException(error)
            new = kafka_admin.NewTopic(
                self.topic,
                num_partitions=self.num_partitions,
                replication_factor=self.replication_factor,
                config={"cleanup.policy": "compact"},
            )
            future = admin.create_topics([new], request_timeout=self.timeout_s)[self.topic]
            try:
                future.result(timeout=self.timeout_s)
                _LOG.info("%s: created the compacted topic", self._where())
            except kafka.KafkaException as exc:
                if exc.args[0].code() != kafka.KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
            return
        resource = kafka_admin.ConfigResource("topic", self.topic)
        configs = admin.describe_configs([resource], request_timeout=self.timeout_s)[resource]
        policy = configs.result(timeout=self.timeout_s)["cleanup.policy"].value or ""
        if "compact" not in policy.split(","):
            raise DurableStoreError(
                f"{self._where()}: the topic's cleanup.policy is {policy!r}, so Kafka deletes "
                "records by age and a restored run could make recorded calls again: set "
                f"cleanup.policy=compact on it, or name a new topic with {_TOPIC_OPTION} "
                "(the store creates it compacted)"
            )

    def _open(self) -> None:
        """Read the topic to its end into memory, keeping the consumer for catching up."""
        kafka = _import_kafka()
        if self._cipher is not None:
            self._cipher.check()
        kafka_admin: Any = importlib.import_module("confluent_kafka.admin")
        self._admin = kafka_admin.AdminClient(self._common_config())
        self._ensure_topic(self._admin)
        consumer = kafka.Consumer(
            {
                **self._common_config(),
                "group.id": f"flink-agents-durable-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                "queued.max.messages.kbytes": 8192,
            }
        )
        try:
            partitions = self._wait_for_partitions(kafka, consumer)
            consumer.assign(
                [kafka.TopicPartition(self.topic, p, kafka.OFFSET_BEGINNING) for p in partitions]
            )
            self._consumer, self._partitions = consumer, len(partitions)
            self._next_offsets = dict.fromkeys(partitions, 0)
            self._runs = {}
            foreign: dict[bytes, str] = {}
            self._catch_up(partitions, foreign)
        except BaseException:
            self._consumer = None
            consumer.close()
            raise
        if foreign:
            raise foreign_pipeline_error(
                self._where(),
                self.topic,
                self.pipeline,
                min(foreign.values()),
                container="topic",
                own_option=_TOPIC_OPTION,
            )

    def _wait_for_partitions(self, kafka: Any, consumer: Any) -> list[int]:
        """The topic's partitions, once every one has a leader (a new topic takes a moment)."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            found = consumer.list_topics(topic=self.topic, timeout=self.timeout_s).topics[
                self.topic
            ]
            error = found.error
            if error is None:
                led = [p.error is None and p.leader >= 0 for p in found.partitions.values()]
                if found.partitions and all(led):
                    return sorted(found.partitions)
            elif not _settling(kafka, error) or time.monotonic() > deadline:
                raise kafka.KafkaException(error)
            if time.monotonic() > deadline:
                raise DurableStoreUnavailableError(
                    f"{self._where()}: the topic's partitions have no leader after "
                    f"{self.timeout_s:g} s"
                )
            time.sleep(0.05)

    def _partition_of(self, pipeline: str, agent_key: str) -> int:
        """Where every record of a run key goes: one run's records share a partition."""
        data = json.dumps([pipeline, agent_key], ensure_ascii=False).encode("utf-8")
        return zlib.crc32(data) % self._partitions

    def _catch_up(self, partitions: Iterable[int], foreign: dict[bytes, str] | None) -> None:
        """Apply every message of ``partitions`` up to their current ends (the others' too,
        as they come). ``foreign`` collects other pipelines' live keys (None: ignore them)."""
        kafka = _import_kafka()
        consumer = self._consumer
        ends: dict[int, int] = {}
        for partition, high in self._end_offsets(kafka, partitions).items():
            if self._next_offsets[partition] < high:
                ends[partition] = high
        deadline = time.monotonic() + self.timeout_s
        while any(self._next_offsets[p] < high for p, high in ends.items()):
            # What has arrived, else wait for the next message (a batch consume with a
            # timeout would wait all of it for a full batch).
            messages = consumer.consume(num_messages=1000, timeout=0)
            if not messages:
                message = consumer.poll(0.2)
                messages = [] if message is None else [message]
            if messages:
                deadline = time.monotonic() + self.timeout_s  # progress: wait again
            elif time.monotonic() > deadline:
                raise DurableStoreUnavailableError(
                    f"{self._where()}: reading the topic made no progress for {self.timeout_s:g} s"
                )
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() != kafka.KafkaError._PARTITION_EOF:
                        raise kafka.KafkaException(error)
                    self._next_offsets[message.partition()] = max(
                        self._next_offsets[message.partition()], message.offset()
                    )
                    continue
                self._next_offsets[message.partition()] = message.offset() + 1
                self._apply(message, foreign)

    def _end_offsets(self, kafka: Any, partitions: Iterable[int]) -> dict[int, int]:
        """The end offset of each of ``partitions``, waiting while a new topic settles.

        Asked through the admin client: a request on the consumer's connection would wait
        behind its pending fetch (up to ``fetch.wait.max.ms``)."""
        latest = importlib.import_module("confluent_kafka.admin").OffsetSpec.latest()
        wanted = {kafka.TopicPartition(self.topic, p): latest for p in partitions}
        deadline = time.monotonic() + self.timeout_s
        ends: dict[int, int] = {}
        while wanted:
            futures = self._admin.list_offsets(
                wanted,
                isolation_level=kafka.IsolationLevel.READ_COMMITTED,
                request_timeout=self.timeout_s,
            )
            for partition, future in futures.items():
                try:
                    ends[partition.partition] = future.result().offset
                    del wanted[partition]
                except kafka.KafkaException as exc:
                    if not _settling(kafka, exc.args[0]) or time.monotonic() > deadline:
                        raise
            if wanted:
                time.sleep(0.05)
        return ends

    def _apply(self, message: Any, foreign: dict[bytes, str] | None) -> None:
        assert self._runs is not None
        raw_key, raw_value = message.key(), message.value()
        parsed = _parse_key(raw_key)
        stored = None if raw_value is None else _parse_value(raw_value)
        where = f"the message at partition {message.partition()} offset {message.offset()}"
        if parsed is None or (raw_value is not None and stored is None):
            raise DurableStoreError(
                f"{self._where()}: {where} is not a durable-call record of this runtime: the "
                f"topic holds other data (name a topic of its own with {_TOPIC_OPTION})"
            )
        pipeline, agent_key, seq, position = parsed
        if message.partition() != self._partition_of(pipeline, agent_key):
            raise DurableStoreError(
                f"{self._where()}: {where} is not on the partition its key maps to: the "
                "topic's partition count changed after records were written, so a record and "
                "its later versions may sit on different partitions. Keep the partition count "
                f"of an action-state topic; name a new topic with {_TOPIC_OPTION}"
            )
        if pipeline != self.pipeline:
            if foreign is not None and not self.shared:
                if stored is None:
                    foreign.pop(raw_key, None)
                else:
                    foreign[raw_key] = pipeline
            return
        runs = self._runs
        if stored is not None:
            runs.setdefault(agent_key, {}).setdefault(seq, {})[position] = stored
            return
        run = runs.get(agent_key, {}).get(seq)
        if run is not None:
            run.pop(position, None)
            if not run:
                del runs[agent_key][seq]
                if not runs[agent_key]:
                    del runs[agent_key]

    def _send(self, messages: list[tuple[str, bytes, bytes | None]]) -> None:
        """Write ``(agent_key, key, value)`` messages in order, each to its run's partition;
        return once Kafka acknowledged every one."""
        kafka = _import_kafka()
        if self._producer is None:
            self._producer = self._new_producer()
        producer = self._producer
        failures: list[Any] = []

        def delivered(error: Any, _message: Any) -> None:
            if error is not None:
                failures.append(error)

        for agent_key, key, value in messages:
            partition = self._partition_of(self.pipeline, agent_key)
            producer.produce(
                self.topic, key=key, value=value, partition=partition, on_delivery=delivered
            )
        left = producer.flush(self.timeout_s + 5.0)
        if failures:
            raise kafka.KafkaException(failures[0])
        if left:
            raise DurableStoreUnavailableError(
                f"{self._where()}: {left} messages not acknowledged within "
                f"{self.timeout_s + 5.0:g} s"
            )

    def _drop_clients(self) -> None:
        """Forget the records and the clients: the next operation reads the topic again."""
        producer, self._producer = self._producer, None
        consumer, self._consumer = self._consumer, None
        self._runs = self._admin = None
        try:
            if producer is not None:
                producer.purge()
                producer.flush(0)
            if consumer is not None:
                consumer.close()
        except Exception:  # a broken client: nothing more to release
            _LOG.debug("closing the Kafka clients failed", exc_info=True)

    def _error(self, operation: str, exc: BaseException) -> DurableStoreError:
        error = exc.args[0] if exc.args else None
        transient = bool(
            error is not None
            and hasattr(error, "code")
            and not error.fatal()
            and (error.retriable() or error.code() in _transient_codes())
        )
        kind = DurableStoreUnavailableError if transient else DurableStoreError
        return kind(f"{self._where()}: {operation} failed: {type(exc).__name__}: {exc}")

    def _run(self, operation: str, agent_keys: Iterable[str], body: Callable[[Runs], T]) -> T:
        """``body`` over the records, once those of ``agent_keys`` are caught up with the
        topic (every write any store made to them before is seen)."""
        kafka = _import_kafka()
        with self._lock:
            if self._pid != os.getpid():  # forked: the parent's clients are not ours
                self._producer = self._consumer = self._admin = self._runs = None
                self._pid = os.getpid()
            try:
                if self._runs is None:
                    self._open()
                else:
                    partitions = {self._partition_of(self.pipeline, k) for k in agent_keys}
                    self._catch_up(sorted(partitions), None)
                assert self._runs is not None
                return body(self._runs)
            except DurableStoreError:
                self._drop_clients()
                raise
            except (kafka.KafkaException, BufferError) as exc:
                self._drop_clients()
                raise self._error(operation, exc) from exc

    def _key(self, agent_key: str, seq: int, position: Position) -> bytes:
        return _message_key(self.pipeline, agent_key, seq, position)

    @staticmethod
    def _position(key: DurableCallKey) -> Position:
        return (key.step, key.action, key.call_index)

    def _put(
        self, runs: Runs, key: DurableCallKey, stored: Stored, dropped: list[Position]
    ) -> None:
        """Tombstone ``dropped``, write ``stored`` at ``key``; then update memory."""
        position = self._position(key)
        messages: list[tuple[str, bytes, bytes | None]] = [
            (key.agent_key, self._key(key.agent_key, key.seq, p), None)
            for p in dropped
            if p != position
        ]
        value = _message_value(*stored)
        messages.append((key.agent_key, self._key(key.agent_key, key.seq, position), value))
        self._send(messages)
        run = runs.setdefault(key.agent_key, {}).setdefault(key.seq, {})
        for p in dropped:
            run.pop(p, None)
        run[position] = stored

    def _delete(self, runs: Runs, doomed: dict[str, dict[int, list[Position]]]) -> int:
        """Tombstone the records ``doomed`` names (agent key -> seq -> positions)."""
        messages: list[tuple[str, bytes, bytes | None]] = [
            (agent_key, self._key(agent_key, seq, position), None)
            for agent_key, by_seq in doomed.items()
            for seq, positions in by_seq.items()
            for position in positions
        ]
        if not messages:
            return 0
        self._send(messages)
        for agent_key, by_seq in doomed.items():
            for seq, positions in by_seq.items():
                run = runs[agent_key][seq]
                for position in positions:
                    del run[position]
                if not run:
                    del runs[agent_key][seq]
            if not runs[agent_key]:
                del runs[agent_key]
        return len(messages)

    def _record(self, agent_key: str, seq: int, position: Position, stored: Stored) -> CallRecord:
        step, action, call_index = position
        row: Row = (agent_key, seq, step, action, call_index, *stored)
        return record_from_row(row, self._cipher)

    # -- ActionStateStore ------------------------------------------------------------------

    def get(self, key: DurableCallKey) -> CallRecord | None:
        position = self._position(key)

        def body(runs: Runs) -> Stored | None:
            return runs.get(key.agent_key, {}).get(key.seq, {}).get(position)

        stored = self._run("get", [key.agent_key], body)
        return None if stored is None else self._record(key.agent_key, key.seq, position, stored)

    def begin(self, key: DurableCallKey, digest: str) -> None:
        def body(runs: Runs) -> None:
            self._put(runs, key, (digest, "pending", None), _later(runs, key))

        self._run("begin", [key.agent_key], body)

    def begin_again(self, key: DurableCallKey, digest: str) -> None:
        def body(runs: Runs) -> None:
            self._put(runs, key, (digest, "pending", None), [])

        self._run("begin again", [key.agent_key], body)

    def record_outcome(self, key: DurableCallKey, digest: str, outcome: CallOutcome) -> None:
        status, payload = outcome_to_columns(outcome, self._cipher)

        def body(runs: Runs) -> None:
            self._put(runs, key, (digest, status, payload), [])

        self._run("record outcome", [key.agent_key], body)

    def load_run(self, agent_key: str, seq: int) -> list[CallRecord]:
        def body(runs: Runs) -> list[tuple[Position, Stored]]:
            return sorted(runs.get(agent_key, {}).get(seq, {}).items())

        records = self._run("load run", [agent_key], body)
        return [self._record(agent_key, seq, position, stored) for position, stored in records]

    def drop_from(self, key: DurableCallKey) -> int:
        def body(runs: Runs) -> int:
            return self._delete(runs, {key.agent_key: {key.seq: _later(runs, key)}})

        return self._run("drop records", [key.agent_key], body)

    def prune(self, agent_key: str, up_to_seq: int) -> int:
        return self.prune_many({agent_key: up_to_seq})

    def prune_many(self, up_to_seq_by_key: Mapping[str, int]) -> int:
        if not up_to_seq_by_key:
            return 0

        def body(runs: Runs) -> int:
            doomed = {
                agent_key: {
                    seq: list(run) for seq, run in runs.get(agent_key, {}).items() if seq <= up_to
                }
                for agent_key, up_to in up_to_seq_by_key.items()
            }
            return self._delete(runs, {k: v for k, v in doomed.items() if v})

        return self._run("prune", up_to_seq_by_key, body)

    def close(self) -> None:
        """Release the clients and forget the records: the next use reads the topic again."""
        with self._lock:
            self._drop_clients()


def _settling(kafka: Any, error: Any) -> bool:
    """Whether ``error`` is one a topic gives while it is being created or its leader moves."""
    codes = kafka.KafkaError
    settling = {
        codes.UNKNOWN_TOPIC_OR_PART,
        codes.LEADER_NOT_AVAILABLE,
        codes.NOT_LEADER_FOR_PARTITION,
        codes.UNKNOWN_LEADER_EPOCH,
        codes.FENCED_LEADER_EPOCH,
        codes._NOENT,  # the admin client's metadata does not know the leaders yet
    }
    return error.code() in settling or (error.retriable() and not error.fatal())


def _transient_codes() -> frozenset[int]:
    """librdkafka's codes of a broker that cannot be reached or answer just now."""
    error = _import_kafka().KafkaError
    return frozenset(
        {
            error._TRANSPORT,
            error._ALL_BROKERS_DOWN,
            error._MSG_TIMED_OUT,
            error._TIMED_OUT,
            error._TIMED_OUT_QUEUE,
            error._RESOLVE,
            error.REQUEST_TIMED_OUT,
            error.NOT_ENOUGH_REPLICAS,
            error.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            error.LEADER_NOT_AVAILABLE,
            error.NOT_LEADER_FOR_PARTITION,
        }
    )
