"""Kafka in and out across a broker outage, and a broker that is down at submission.

`test_answers_exactly_once_across_a_broker_restart`: an unbounded KafkaSource -> `OrderAgent`
(each key's inputs so far in its memory) -> exactly-once KafkaSink job, checkpointed, with a
fixed-delay restart strategy, runs against a broker of the test's own. Once answers are
committed, the broker is killed; the job fails over (seen RESTARTING: the Kafka clients'
timeouts are set to seconds here) while it is down; the broker is started again on the same
port with the same data, more inputs are written, and a `read_committed` consumer sees every
answer exactly once, in input order per key, with memory consistent with them.

`test_a_broker_down_at_submission_fails_clearly`: `examples/kafka_triage.py` pointed at an
address where no broker listens exits within seconds with `KafkaUnreachableError` naming the
bootstrap servers (`check_kafka_brokers`), instead of a job that waits out the clients'
timeouts on every restart attempt and then reports a timeout that names no address.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.agents import OrderAgent
from e2e_tests.exactly_once import check_answered_once, keyed_inputs
from e2e_tests.kafka import (
    PrivateBroker,
    agent_between_topics,
    connector_jars,
    create_topics,
    keyed_records,
    produce,
    read_committed,
)

pytestmark = pytest.mark.flink

KEYS, INPUTS = 3, 6
RECORDS = KEYS * INPUTS
CLIENT_TIMEOUTS = {
    # Seconds, not the clients' minutes, so that the outage fails the job over in the test.
    "request.timeout.ms": "2000",
    "default.api.timeout.ms": "4000",
    "max.block.ms": "4000",
    "delivery.timeout.ms": "6000",
}


def _key_of(record: Any) -> str:
    return str(record["key"])


def test_answers_exactly_once_across_a_broker_restart(
    stream_env: Callable[..., Any], tmp_path: Path
) -> None:
    from pyflink.common.job_status import JobStatus

    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    broker = PrivateBroker(tmp_path / "kafka")
    bootstrap = broker.start()
    try:
        topics = create_topics(bootstrap, 2)
        produce(bootstrap, topics["in"], keyed_records(KEYS, 0, RECORDS // 2))
        env = stream_env(
            parallelism=2,
            **{
                "execution.checkpointing.interval": "200 ms",
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.attempts": "100",
                "restart-strategy.fixed-delay.delay": "1 s",
            },
        )
        env.add_jars(*connector_jars())
        agents_env = FlinkAgentsExecutionEnvironment(env)
        agent_between_topics(
            env,
            agents_env,
            OrderAgent(),
            bootstrap=bootstrap,
            topics=topics,
            key_selector=_key_of,
            parse=json.loads,
            bounded=False,
            client_properties=CLIENT_TIMEOUTS,
        )
        client = env.execute_async("kafka-broker-outage")
        try:
            assert read_committed(bootstrap, topics["out"], expected=1, timeout_s=120, settle_s=0)
            broker.kill()

            def status() -> Any:
                return client.get_job_status().result()

            deadline = time.monotonic() + 60
            while status() == JobStatus.RUNNING:  # until the outage fails the job over
                assert time.monotonic() < deadline, "the job did not notice the outage"
                time.sleep(0.1)
            seen = status()
            broker.restart()
            produce(bootstrap, topics["in"], keyed_records(KEYS, RECORDS // 2, RECORDS))
            lines = read_committed(bootstrap, topics["out"], expected=RECORDS, timeout_s=120)
            errors = read_committed(bootstrap, topics["errors"], expected=0, settle_s=0.5)
        finally:
            client.cancel().result()
    finally:
        broker.stop()

    assert seen in (JobStatus.RESTARTING, JobStatus.FAILING), seen  # it failed over
    assert errors == []
    outputs = [json.loads(value) for _, value in lines]
    check_answered_once(outputs, keyed_inputs(KEYS, RECORDS), [outputs])


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "kafka_triage.py"


def test_a_broker_down_at_submission_fails_clearly() -> None:
    from tools.flink_cluster.standalone import free_port

    nowhere = f"127.0.0.1:{free_port()}"  # free a moment ago: nothing listens there
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--bootstrap", nowhere],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
        check=False,
    )
    took = time.monotonic() - started
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("flink_agents.runtime.errors.KafkaUnreachableError: "), last
    assert f"no Kafka broker answers at bootstrap servers '{nowhere}'" in last, last
    assert took < 60, f"took {took:.0f} s"
