"""What the two quickstart scripts share to run here: reading the reviews, the local
runner, and how results are printed.

Upstream's scripts read ``resources/product_review.txt`` as an endless stream (its
``FileSource`` watches the file) and print results in the TaskManager log. Here the
source reads the file once, so a job ends, and each result is printed as one line
``RESULT {json}`` on this process's standard output (tests read those lines).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

__all__ = ["HERE", "REVIEWS", "print_results", "reviews", "share_this_folder_with_workers"]

HERE = Path(__file__).resolve().parent
REVIEWS = HERE / "resources" / "product_review.txt"


def reviews() -> list[str]:
    """The review lines of the input file."""
    return [line for line in REVIEWS.read_text(encoding="utf-8").splitlines() if line.strip()]


def share_this_folder_with_workers() -> None:
    """Put this folder on PYTHONPATH before PyFlink starts its JVM, so Flink's Python
    workers import the agent's modules as this script does (upstream's instructions set
    PYTHONPATH for the same reason)."""
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(HERE) not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), *parts])


def result_line(result: Any) -> str:
    """``RESULT {json}`` for one result."""
    if isinstance(result, BaseModel):
        result = result.model_dump(mode="json")
    return "RESULT " + json.dumps(result, sort_keys=True)


def print_results(results: list[Any]) -> None:
    for result in results:
        print(result_line(result))
    sys.stdout.flush()
