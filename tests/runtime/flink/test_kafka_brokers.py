"""check_kafka_brokers: fails in bounded time naming the bootstrap servers when no broker
listens, passes as soon as one does (also one that comes up within the timeout)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from flink_agents.runtime.flink import FlinkSetupError, KafkaUnreachableError, check_kafka_brokers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def listening() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield int(server.getsockname()[1])


def test_a_listening_broker_passes(listening: int) -> None:
    check_kafka_brokers(f"127.0.0.1:{listening}", timeout_s=1)


def test_one_listening_server_of_several_is_enough(listening: int) -> None:
    check_kafka_brokers(f"127.0.0.1:{_free_port()}, PLAINTEXT://127.0.0.1:{listening}")


def test_nothing_listening_fails_in_bounded_time_naming_the_servers() -> None:
    servers = f"127.0.0.1:{_free_port()},nohost.invalid:9092"
    started = time.monotonic()
    with pytest.raises(KafkaUnreachableError) as raised:
        check_kafka_brokers(servers, timeout_s=1)
    assert time.monotonic() - started < 3
    message = str(raised.value)
    assert message.startswith(f"no Kafka broker answers at bootstrap servers {servers!r}")
    assert "Connection refused" in message
    assert isinstance(raised.value, FlinkSetupError)


def test_a_broker_coming_up_within_the_timeout_passes() -> None:
    port = _free_port()
    server = socket.socket()

    def listen_later() -> None:
        time.sleep(0.6)
        server.bind(("127.0.0.1", port))
        server.listen()

    thread = threading.Thread(target=listen_later)
    thread.start()
    try:
        check_kafka_brokers(f"127.0.0.1:{port}", timeout_s=10)
    finally:
        thread.join()
        server.close()


@pytest.mark.parametrize("servers", ["", " , ", "127.0.0.1", "127.0.0.1:port"])
def test_no_address_or_a_malformed_one_is_refused(servers: str) -> None:
    with pytest.raises(KafkaUnreachableError, match="bootstrap"):
        check_kafka_brokers(servers, timeout_s=0.1)
