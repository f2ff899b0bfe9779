"""The shipped example runs on its built-in input with no API key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "support_triage.py"


def test_example_runs_offline() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "model: offline"
    results = [line.split(": ", 1) for line in lines[1:]]
    assert sorted(customer for customer, _ in results) == [
        "cust-08",
        "cust-17",
        "cust-17",
        "cust-23",
    ]
    triages = [json.loads(body) for _, body in results]
    assert all(set(t) == {"category", "priority", "summary", "reply"} for t in triages)
    shipping = [t for t in triages if t["category"] == "shipping"]
    assert len(shipping) == 1 and "in transit" in shipping[0]["reply"]  # the tool was used
