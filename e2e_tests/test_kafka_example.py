"""examples/kafka_triage.py runs as docs/kafka.md shows, in both forms, against a broker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from e2e_tests.kafka import connector_jars

pytestmark = pytest.mark.flink

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "kafka_triage.py"


@pytest.mark.parametrize("form", ["datastream", "table"])
def test_kafka_example(kafka_bootstrap: str, form: str) -> None:
    connector_jars()  # skips (fails under CI) where no connector can be had
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    args = ["--table"] if form == "table" else []
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--bootstrap", kafka_bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    answers = [json.loads(line.split(": ", 1)[1]) for line in lines if line.startswith("answer")]
    # Each ticket answered once; cust-17's two in order, after the order lookup.
    assert sorted(a["customer"] for a in answers) == ["cust-08", "cust-17", "cust-17", "cust-23"]
    assert [a["category"] for a in answers if a["customer"] == "cust-17"] == [
        "shipping",
        "billing",
    ]
    if form == "table":  # the answers are keyed by customer again
        assert all(
            line.startswith(f"answer {a['customer']}:")
            for line, a in zip(
                [line for line in lines if line.startswith("answer")], answers, strict=True
            )
        )
    # The record that is not JSON went to the dead-letter topic, once.
    assert [line for line in lines if line.startswith("dead letter")] == [
        "dead letter " + ("cust-99" if form == "table" else "invalid") + ": ValidationError"
    ]
