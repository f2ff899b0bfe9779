"""tools/kafka: the broker script reuses the broker it started, the connector script names
jars for the installed Flink, and the Kafka tests skip (or fail under CI) without Kafka."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from e2e_tests import kafka
from e2e_tests.kafka import BOOTSTRAP_ENV, TOOLS, connector_jars, start_broker


@pytest.mark.flink
def test_start_reuses_the_broker_it_started(kafka_bootstrap: str) -> None:
    if os.environ.get(BOOTSTRAP_ENV):
        pytest.skip(f"the broker is {BOOTSTRAP_ENV}'s, not one tools/kafka/start.sh started")
    again = subprocess.run(
        ["bash", str(TOOLS / "start.sh")], capture_output=True, text=True, check=True
    )
    assert again.stdout.split()[-1] == kafka_bootstrap
    assert "reusing" in again.stderr


def test_connector_jars_match_the_installed_flink() -> None:
    import importlib.metadata

    line = ".".join(importlib.metadata.version("apache-flink").split(".")[:2])
    line = {"2.3": "2.2"}.get(line, line)  # 2.3 runs the 2.2 connector (no release of its own)
    jars = connector_jars()
    assert jars and all(Path(j.removeprefix("file://")).is_file() for j in jars)
    assert any(f"-{line}.jar" in j and "connector-kafka" in j for j in jars), jars


def test_no_java_skips_or_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BOOTSTRAP_ENV, raising=False)
    monkeypatch.setattr(kafka.shutil, "which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Java to run Kafka"):
        start_broker()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the Kafka tests"):
        start_broker()
