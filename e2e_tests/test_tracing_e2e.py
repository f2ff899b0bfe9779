"""OpenTelemetry traces from mini-cluster jobs, exported over OTLP/HTTP to a receiver on
127.0.0.1 (`otlp_receiver.OtlpReceiver`).

Each job runs in a fresh interpreter (`tracing_job.py`) with the ``OTEL_*`` variables
set, as a deployment would set them: in thread mode the worker is Python inside the job's
JVM, another process than pytest's, and it sets up the SDK from those variables
(`install_sdk_from_env`, when the agent engine is built). Spans go through the OTLP/HTTP
exporter, a batch processor and a real HTTP request; the receiver decodes the protobuf.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.agents import PNG_B64
from e2e_tests.otlp_receiver import OtlpReceiver, ReceivedSpan
from e2e_tests.tracing_job import RESUME_KEY, RESUME_RECORDS

pytestmark = pytest.mark.flink

ROOT = Path(__file__).resolve().parents[1]


def _run_job(receiver: OtlpReceiver, tmp_path: Path, *args: str) -> list[Any]:
    output = tmp_path / "outputs.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env.update(
        PYTHONPATH=os.pathsep.join([str(ROOT), *paths]),
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_SERVICE_NAME="e2e-tracing",
        OTEL_BSP_SCHEDULE_DELAY="200",
    )
    result = subprocess.run(
        [sys.executable, "-m", "e2e_tests.tracing_job", *args, "--output", str(output)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(output.read_text())


def _traces(spans: list[ReceivedSpan]) -> dict[str, list[ReceivedSpan]]:
    by_trace: dict[str, list[ReceivedSpan]] = defaultdict(list)
    for span in spans:
        by_trace[span["trace_id"]].append(span)
    return by_trace


def _only(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    found = [s for s in spans if s["name"] == name]
    assert len(found) == 1, [s["name"] for s in spans]
    return found[0]


def test_a_chat_job_exports_one_trace_per_input_over_otlp_http(tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        outputs = _run_job(receiver, tmp_path, "chat")
        assert sorted(o["key"] for o in outputs) == ["c0", "c1", "c2", "c3"]
        # The job ended: the operator closed its engine, which flushed the provider.
        spans = receiver.wait_for(
            lambda found: sum(s["name"].startswith("invoke_agent") for s in found) >= 4,
            timeout_s=60,
        )

    assert {s["resource"]["service.name"] for s in spans} == {"e2e-tracing"}
    traces = _traces(spans)
    assert len(traces) == 4
    keys = set()
    for trace in traces.values():
        root = _only(trace, "invoke_agent ChartAgent")
        assert root["parent_span_id"] == ""
        assert root["kind"] == "SPAN_KIND_INTERNAL"
        assert root["attributes"]["gen_ai.operation.name"] == "invoke_agent"
        assert root["attributes"]["gen_ai.agent.name"] == "ChartAgent"
        assert root["attributes"]["flink_agents.seq"] == 0
        assert root["attributes"]["flink_agents.outputs"] == 1
        keys.add(root["attributes"]["flink_agents.key"])
        by_id = {s["span_id"]: s for s in trace}
        actions = [s for s in trace if s["name"].startswith("action ")]
        assert sorted(a["name"] for a in actions) == [
            "action _chat_model_action",
            "action _chat_model_action",
            "action _tool_call_action",
            "action answer",
            "action ask",
        ]
        assert all(a["parent_span_id"] == root["span_id"] for a in actions)
        chats = [s for s in trace if s["name"] == "chat"]
        assert len(chats) == 2
        for chat in chats:
            assert by_id[chat["parent_span_id"]]["name"] == "action _chat_model_action"
            assert chat["kind"] == "SPAN_KIND_CLIENT"
            assert chat["attributes"]["gen_ai.operation.name"] == "chat"
            assert chat["attributes"]["gen_ai.provider.name"] == "_OTHER"
            assert chat["attributes"]["gen_ai.response.model"] == "function-model"
            assert chat["attributes"]["flink_agents.chat.retries"] == 0
            assert "gen_ai.input.messages" in chat["attributes"]
        tool = _only(trace, "execute_tool render_chart")
        assert by_id[tool["parent_span_id"]]["name"] == "action _tool_call_action"
        assert tool["attributes"]["gen_ai.tool.call.id"] == "call_1"
        assert tool["status"]["code"] == "UNSET"
        # The image the tool returned is on the spans as its type, never its bytes.
        result = json.loads(tool["attributes"]["gen_ai.tool.call.result"])
        title = "chart" + root["attributes"]["flink_agents.key"][1:]
        assert result == [
            {"type": "image", "mime_type": "image/png", "name": f"{title}.png", "size_bytes": 208}
        ]
    assert keys == {"c0", "c1", "c2", "c3"}
    everything = json.dumps(spans)
    assert PNG_B64 not in everything
    assert PNG_B64[:64] not in everything


def test_a_run_restored_from_a_checkpoint_continues_its_trace(tmp_path: Path) -> None:
    marker = tmp_path / "failed-once"
    with OtlpReceiver() as receiver:
        outputs = _run_job(receiver, tmp_path, "resume", "--marker", str(marker))
        assert marker.exists()  # the run failed once, the job restarted
        assert sorted({o["n"] for o in outputs}) == list(range(RESUME_RECORDS))

        def target_done(found: list[ReceivedSpan]) -> bool:
            return any(
                s["name"] == "invoke_agent ResumeAgent"
                and s["attributes"].get("flink_agents.key") == RESUME_KEY
                and s["attributes"].get("flink_agents.outputs") == 1
                for s in found
            )

        spans = receiver.wait_for(target_done, timeout_s=60)

    roots = [
        s
        for s in spans
        if s["name"] == "invoke_agent ResumeAgent"
        and s["attributes"]["flink_agents.key"] == RESUME_KEY
    ]
    (first,) = [r for r in roots if "flink_agents.resumed" not in r["attributes"]]
    assert first["status"]["code"] == "ERROR"  # its step failed the task
    assert "injected failure" in first["status"]["message"]
    resumed = [r for r in roots if r["attributes"].get("flink_agents.resumed")]
    assert resumed, roots
    # Restored from the checkpoint that held the run between steps: the same trace, under
    # the first root.
    for span in resumed:
        assert span["trace_id"] == first["trace_id"]
        assert span["parent_span_id"] == first["span_id"]
    finished = [r for r in resumed if r["attributes"].get("flink_agents.outputs") == 1]
    assert len(finished) == 1
    trace = [s for s in spans if s["trace_id"] == first["trace_id"]]
    finishes = [s for s in trace if s["name"] == "action finish"]
    failed = [s for s in finishes if s["status"]["code"] == "ERROR"]
    assert [s["parent_span_id"] for s in failed] == [first["span_id"]]
    assert any(s["parent_span_id"] == finished[0]["span_id"] for s in finishes)
    # Every other input is a trace of its own.
    others = {
        s["attributes"]["flink_agents.key"]
        for s in spans
        if s["name"] == "invoke_agent ResumeAgent" and s["trace_id"] != first["trace_id"]
    }
    assert others == {f"k{i}" for i in range(1, RESUME_RECORDS)}
