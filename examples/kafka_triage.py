"""Support-ticket triage from Kafka to Kafka, exactly once, with a dead-letter topic.

    export KAFKA=$(bash tools/kafka/start.sh)          # a local broker (Maven fetches it)
    python examples/kafka_triage.py --bootstrap $KAFKA            # DataStream form
    python examples/kafka_triage.py --bootstrap $KAFKA --table    # Table API / SQL form

The example writes the tickets of `support_triage.py` (and one record that is not JSON) to a
`tickets` topic keyed by customer, runs the triage agent as a checkpointed PyFlink job that
reads them and writes its answers to an `answers` topic in Kafka transactions
(`DeliveryGuarantee.EXACTLY_ONCE`), and the records it could not handle to a `dead-letters`
topic (`input-failure.policy: skip`, `to_error_datastream()`). Then it reads both topics with
`isolation.level=read_committed` and prints them. The model is the offline one of
`support_triage.py`, so no API key is needed. Topic names get a suffix of their own per run
(`--suffix`), so runs do not see each other's records.

The forms (see docs/kafka.md):

- DataStream: `KafkaSource` -> agent -> `KafkaSink`. PyFlink's `KafkaSource` reads record
  values only, so the agent is keyed by the customer field of the value.
- Table API / SQL: a Kafka table in (`key.fields`: the customer is the Kafka record key), the
  agent, a Kafka table out (the answer keyed by customer again).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flink_agents.api import (
    BaseChatModelSetup,
    ChatMessage,
    ChatRequestEvent,
    Event,
    FunctionChatModelConnection,
    InputEvent,
    ResourceDescriptor,
    RunnerContext,
    action,
    chat_model_connection,
    chat_model_setup,
)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# The Python workers import this file's classes by module name, as the driver does.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p
)

from support_triage import (  # noqa: E402  (after the path is set)
    SYSTEM_PROMPT,
    TICKETS,
    SupportTriageAgent,
    Triage,
    offline_model,
)

__all__ = ["KafkaTriageAgent", "Ticket", "main"]

NOT_JSON = "this record is not JSON"


class Ticket(BaseModel):
    """A ticket as it arrives in a Kafka record's value."""

    customer: str
    text: str


class KafkaTriageAgent(SupportTriageAgent):
    """`SupportTriageAgent` on Kafka record values: checks each value is a `Ticket` (a record
    that is not fails its run, and `input-failure.policy: skip` turns it into a failure
    record on the error stream) and always answers with the offline model."""

    @action(InputEvent)
    @staticmethod
    def triage(event: Event, ctx: RunnerContext) -> None:
        value = event.attributes["input"]
        if not isinstance(value, str):  # a Table row (a PyFlink Row): customer, value
            value = value["value"]
        ticket = Ticket.model_validate_json(value)  # raises on bad JSON or a wrong schema
        ctx.send_event(
            ChatRequestEvent(
                model="triage_model",
                messages=[ChatMessage.system(SYSTEM_PROMPT), ChatMessage.user(ticket.text)],
                output_schema=Triage,
            )
        )

    @chat_model_connection
    @staticmethod
    def model_connection() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=FunctionChatModelConnection, function=offline_model)

    @chat_model_setup
    @staticmethod
    def triage_model() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=BaseChatModelSetup, connection="model_connection", tools=["lookup_order"]
        )


def customer_of(value: str) -> str:
    """The key of a record value: its customer, or `invalid` for a record that is no ticket
    (its run fails in the agent and the record goes to the dead-letter topic)."""
    try:
        return str(json.loads(value)["customer"])
    except (ValueError, KeyError, TypeError):
        return "invalid"


def answer_json(output: dict[str, Any]) -> str:
    return json.dumps(output, sort_keys=True)


def failure_json(failure: dict[str, Any]) -> str:
    return json.dumps(failure, sort_keys=True, default=str)


# ---------------------------------------------------------------- the job, two forms


def connector_jars() -> list[str]:
    """The Flink Kafka connector for the installed apache-flink (tools/kafka/connector.sh)."""
    script = HERE.parent / "tools" / "kafka" / "connector.sh"
    done = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, check=True, env=dict(os.environ)
    )
    return [f"file://{line}" for line in done.stdout.split()]


def _environment(checkpoint_ms: int) -> tuple[Any, Any]:
    from pyflink.common import Configuration

    from flink_agents.runtime.flink import (
        FlinkAgentsExecutionEnvironment,
        create_stream_execution_environment,
    )

    config = Configuration()
    # A failing job restarts from its last checkpoint a few times, then fails with the error.
    config.set_string("restart-strategy.type", "fixed-delay")
    config.set_string("restart-strategy.fixed-delay.attempts", "3")
    config.set_string("restart-strategy.fixed-delay.delay", "1 s")
    env = create_stream_execution_environment(config)
    env.add_jars(*connector_jars())
    env.set_parallelism(1)
    env.enable_checkpointing(checkpoint_ms)  # Kafka transactions commit on checkpoints
    agents_env = FlinkAgentsExecutionEnvironment(env)
    agents_env.get_config().set("input-failure.policy", "skip")
    return env, agents_env


def run_datastream(bootstrap: str, topics: dict[str, str], checkpoint_ms: int = 500) -> None:
    """`KafkaSource` -> agent -> `KafkaSink` (exactly once), failures to a dead-letter sink."""
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.common.serialization import SimpleStringSchema
    from pyflink.datastream.connectors.base import DeliveryGuarantee
    from pyflink.datastream.connectors.kafka import (
        KafkaOffsetsInitializer,
        KafkaRecordSerializationSchema,
        KafkaSink,
        KafkaSource,
    )

    env, agents_env = _environment(checkpoint_ms)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topics["tickets"])
        .set_group_id(f"triage-{topics['tickets']}")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())  # a stream job leaves this out
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    tickets = env.from_source(source, WatermarkStrategy.no_watermarks(), "tickets")

    def sink(topic: str) -> KafkaSink:
        return (
            KafkaSink.builder()
            .set_bootstrap_servers(bootstrap)
            .set_record_serializer(
                KafkaRecordSerializationSchema.builder()
                .set_topic(topic)
                .set_value_serialization_schema(SimpleStringSchema())
                .build()
            )
            .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
            .set_transactional_id_prefix(f"{topic}-{uuid.uuid4().hex[:8]}")
            .set_property("transaction.timeout.ms", "900000")
            .build()
        )

    answers = agents_env.from_datastream(tickets, key_selector=customer_of).apply(
        KafkaTriageAgent()
    )
    answers.to_datastream().map(answer_json, output_type=Types.STRING()).sink_to(
        sink(topics["answers"])
    )
    answers.to_error_datastream().map(failure_json, output_type=Types.STRING()).sink_to(
        sink(topics["dead-letters"])
    )
    env.execute("kafka-triage")


def run_table(bootstrap: str, topics: dict[str, str], checkpoint_ms: int = 500) -> None:
    """A Kafka table in (keyed by the record key), the agent, a Kafka table out."""
    from pyflink.common import Row, Types
    from pyflink.table import StreamTableEnvironment

    env, agents_env = _environment(checkpoint_ms)
    t_env = StreamTableEnvironment.create(env)
    agents_env = type(agents_env)(env, t_env)
    agents_env.get_config().set("input-failure.policy", "skip")
    kafka = f"'connector' = 'kafka', 'properties.bootstrap.servers' = '{bootstrap}'"
    t_env.execute_sql(f"""
        CREATE TABLE tickets (customer STRING, `value` STRING) WITH ({kafka},
          'topic' = '{topics["tickets"]}',
          'properties.group.id' = 'triage-{topics["tickets"]}',
          'scan.startup.mode' = 'earliest-offset',
          'scan.bounded.mode' = 'latest-offset',
          'key.format' = 'raw', 'key.fields' = 'customer',
          'value.format' = 'raw', 'value.fields-include' = 'EXCEPT_KEY')""")

    def exactly_once(topic: str) -> str:
        return (
            f"'topic' = '{topic}', 'sink.delivery-guarantee' = 'exactly-once',"
            " 'properties.transaction.timeout.ms' = '900000',"
            f" 'sink.transactional-id-prefix' = '{topic}-{uuid.uuid4().hex[:8]}'"
        )

    t_env.execute_sql(f"""
        CREATE TABLE answers (customer STRING, answer STRING) WITH ({kafka},
          {exactly_once(topics["answers"])},
          'key.format' = 'raw', 'key.fields' = 'customer',
          'value.format' = 'raw', 'value.fields-include' = 'EXCEPT_KEY')""")
    t_env.execute_sql(f"""
        CREATE TABLE dead_letters (failure STRING) WITH ({kafka},
          {exactly_once(topics["dead-letters"])},
          'value.format' = 'raw')""")

    answers = agents_env.from_table(
        t_env.from_path("tickets"), key_selector=lambda row: row["customer"]
    ).apply(KafkaTriageAgent())
    rows = Types.ROW_NAMED(["customer", "answer"], [Types.STRING(), Types.STRING()])
    answer_rows = answers.to_datastream().map(
        lambda o: Row(o["customer"], answer_json(o)), output_type=rows
    )
    failure_rows = answers.to_error_datastream().map(
        lambda f: Row(failure_json(f)), output_type=Types.ROW_NAMED(["failure"], [Types.STRING()])
    )
    statements = t_env.create_statement_set()
    statements.add_insert("answers", t_env.from_data_stream(answer_rows))
    statements.add_insert("dead_letters", t_env.from_data_stream(failure_rows))
    statements.execute().wait()


# ---------------------------------------------------------------- around the job


def create_topics(bootstrap: str, topics: dict[str, str]) -> None:
    """The topics, with the broker's defaults (records keep the producer's timestamps)."""
    from confluent_kafka.admin import AdminClient, NewTopic  # pyright: ignore[reportPrivateImportUsage]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=1) for topic in topics.values()])
    for future in futures.values():
        future.result(30)


def produce_tickets(bootstrap: str, topic: str) -> None:
    """The tickets of support_triage.py, keyed by customer, and one record that is no ticket."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for ticket in TICKETS:
        value = json.dumps({"customer": ticket["key"], "text": ticket["value"]})
        producer.produce(topic, key=ticket["key"], value=value)
    producer.produce(topic, key="cust-99", value=NOT_JSON)
    producer.flush(30)


def read_committed(bootstrap: str, topic: str, expected: int, timeout_s: float = 60) -> list[Any]:
    """The committed records of a topic (key, value), once `expected` are there or after
    `timeout_s` of waiting."""
    import time

    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    records: list[Any] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(records) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            key = message.key()
            records.append((key.decode() if key else None, (message.value() or b"").decode()))
    finally:
        consumer.close()
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description="Support-ticket triage from Kafka to Kafka.")
    parser.add_argument("--bootstrap", default=os.environ.get("FLINK_AGENTS_KAFKA_BOOTSTRAP"))
    parser.add_argument("--table", action="store_true", help="the Table API / SQL form")
    parser.add_argument("--suffix", default=uuid.uuid4().hex[:8])
    args = parser.parse_args()
    if not args.bootstrap:
        parser.error("--bootstrap HOST:PORT (bash tools/kafka/start.sh prints one)")
    from flink_agents.runtime.flink import check_kafka_brokers

    # A broker that is down fails here, in seconds, naming the address; a job submitted
    # anyway would wait out the Kafka clients' timeouts on every restart attempt.
    check_kafka_brokers(args.bootstrap)
    topics = {name: f"{name}-{args.suffix}" for name in ("tickets", "answers", "dead-letters")}
    create_topics(args.bootstrap, topics)
    produce_tickets(args.bootstrap, topics["tickets"])
    (run_table if args.table else run_datastream)(args.bootstrap, topics)
    for key, value in read_committed(args.bootstrap, topics["answers"], len(TICKETS)):
        print(f"answer {key or ''}: {value}")
    for _, value in read_committed(args.bootstrap, topics["dead-letters"], 1):
        failure = json.loads(value)
        print(f"dead letter {failure['key']}: {failure['error_type']}")


if __name__ == "__main__":
    main()
