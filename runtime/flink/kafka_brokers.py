"""Fail fast, naming the address, when a Kafka job's brokers are down at submission.

A Kafka job submitted while no broker answers does not fail at once: the KafkaSource's
enumerator and the exactly-once KafkaSink's producers wait out the Kafka clients' timeouts
(`default.api.timeout.ms`, `max.block.ms`: 60 s each by default) on every restart attempt,
and the error then names no address (`Failed to list subscribed topic partitions`, caused
by `TimeoutException: Timed out waiting for a node assignment. Call: listNodes`).
`check_kafka_brokers` runs where the job is built, before it is submitted: it connects (TCP)
to the bootstrap servers until one answers or `timeout_s` has passed, and raises
`KafkaUnreachableError` naming them otherwise. It checks that something listens there, not
that it speaks Kafka (a TLS or SASL listener answers the same way).
"""

from __future__ import annotations

import socket
import time

from flink_agents.runtime.errors import KafkaUnreachableError

__all__ = ["check_kafka_brokers"]

_RETRY_S = 0.25


def _host_and_port(server: str) -> tuple[str, int]:
    """`host:port`, `[v6]:port` or `LISTENER://host:port` as the Kafka clients take them."""
    address = server.split("://", 1)[-1]
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise KafkaUnreachableError(
            f"Kafka bootstrap server {server!r} is not host:port (bootstrap.servers)"
        )
    return host.strip("[]"), int(port)


def check_kafka_brokers(bootstrap_servers: str, *, timeout_s: float = 10.0) -> None:
    """Raise `KafkaUnreachableError` unless a broker of `bootstrap_servers` (the
    comma-separated `bootstrap.servers` of the job's Kafka source or sink) accepts a
    connection within `timeout_s` seconds; tried again every 0.25 s until then."""
    servers = [s.strip() for s in bootstrap_servers.split(",") if s.strip()]
    if not servers:
        raise KafkaUnreachableError("no Kafka bootstrap servers given (bootstrap.servers)")
    addresses = [(server, _host_and_port(server)) for server in servers]
    deadline = time.monotonic() + timeout_s
    problems: dict[str, str] = {}
    while True:
        for server, address in addresses:
            left = deadline - time.monotonic()
            try:
                with socket.create_connection(address, timeout=max(left, _RETRY_S)):
                    return
            except OSError as error:
                problems[server] = error.strerror or type(error).__name__
        if time.monotonic() + _RETRY_S > deadline:
            break
        time.sleep(_RETRY_S)
    found = "; ".join(f"{server}: {why}" for server, why in problems.items())
    raise KafkaUnreachableError(
        f"no Kafka broker answers at bootstrap servers {bootstrap_servers!r} within "
        f"{timeout_s:g} s ({found}): start the broker or correct bootstrap.servers. (Submitted "
        "anyway, the job would fail only after the Kafka clients' timeouts, on every restart "
        "attempt, with a timeout that names no address.)"
    )
