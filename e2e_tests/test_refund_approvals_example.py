"""The refund example of docs/approvals.md runs locally and as a PyFlink job whose
decisions come from a second source: small refunds at once, large ones after a review
(approved: made once; declined: the customer reads why)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "refund_approvals.py"

EXPECTED = [
    'cust-1: "Done: refunded 30 EUR on order 1001."',
    'cust-2: "Done: refunded 250 EUR on order 2002 (approved)."',
    'cust-2: "Done: refunded 20 EUR on order 2002."',
    "cust-3: \"Sorry, we could not refund this: tool 'issue_large_refund' was not run: a "
    "person declined this call; reason: 900 EUR is more than a reviewer may approve; call "
    'the customer"',
]


def _run(*args: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        check=True,
    )
    return [line for line in done.stdout.splitlines() if line.startswith("cust-")]


def test_the_refund_example_runs_on_the_local_runner() -> None:
    assert _run() == EXPECTED


@pytest.mark.flink
def test_the_refund_example_runs_as_a_flink_job_with_a_source_of_decisions() -> None:
    assert _run("--flink") == EXPECTED
