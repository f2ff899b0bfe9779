"""``flink_agents.cli.trace_tree``: upstream's trace tree reader, on upstream's records and
this project's, as upstream's monitoring page documents it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api import ChatMessage, FunctionChatModelConnection, TextBlock
from flink_agents.cli.trace_tree import find_log_files, main
from flink_agents.runtime.local_runner import LocalExecutionEnvironment
from tests.runtime.chat_agents import chat_agent
from tests.runtime.test_event_log import photo_tool, vision

Run = Callable[..., tuple[str, str]]


@pytest.fixture
def trace_tree(capsys: pytest.CaptureFixture[str]) -> Run:
    """``trace_tree PATH [--format F]`` in this process: (stdout, stderr)."""

    def run(path: Path, output_format: str = "text") -> tuple[str, str]:
        main([str(path), "--format", output_format])
        captured = capsys.readouterr()
        return captured.out, captured.err

    return run


def flat(
    event_id: str,
    event_type: str,
    upstream: str | None = None,
    action: str | None = None,
    attributes: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Upstream's flat record."""
    record: dict[str, Any] = {
        "timestamp": "2026-01-02T03:04:05Z",
        "logLevel": "STANDARD",
        "eventId": event_id,
        "eventType": event_type,
    }
    if upstream is not None:
        record["upstreamEventId"] = upstream
    if action is not None:
        record["upstreamActionName"] = action
    record["eventAttributes"] = attributes or {}
    return {**record, **extra}


def write(path: Path, records: list[Any], *, indent: int | None = None) -> Path:
    path.write_text("".join(json.dumps(r, indent=indent) + "\n" for r in records))
    return path


def run_chat_agent(options: dict[str, Any]) -> None:
    """The chat agent that calls a tool once, on the local runner, for one input."""
    env = LocalExecutionEnvironment(options)
    agent = chat_agent(
        FunctionChatModelConnection(function=vision), tools={"photo_tool": photo_tool}
    )
    user = ChatMessage.user([TextBlock(text="look")])
    env.from_list([{"key": "cam-1", "value": [user]}]).apply(agent)
    env.execute()


def tool_call_tree(ids: list[str]) -> str:
    """The text tree of the chat agent's run, given its six event ids in log order."""
    shape = [
        ("_input_event", None),
        ("_chat_request_event", "start"),
        ("_tool_request_event", "_chat_model_action"),
        ("_tool_response_event", "_tool_call_action"),
        ("_chat_response_event", "_chat_model_action"),
        ("_output_event", "finish"),
    ]
    lines = ["Trace Tree 1"]
    for depth, ((event_type, action), event_id) in enumerate(zip(shape, ids, strict=True)):
        if action is not None:
            lines.append("  " + "    " * (depth - 1) + f"  [Action: {action}]")
        lines.append("  " + "    " * depth + f"{event_type} ({event_id})")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------- logs of a local run


def test_the_tree_of_a_run_with_a_tool_call_from_upstreams_layout(
    tmp_path: Path, trace_tree: Run
) -> None:
    run_chat_agent({"baseLogDir": str(tmp_path), "eventLoggerType": "file"})
    (log,) = tmp_path.glob("events-*-local-runner-0.log")
    ids = [json.loads(line)["eventId"] for line in log.read_text().splitlines()]
    for path in (log, tmp_path):  # one file, or the directory
        out, err = trace_tree(path)
        assert out == tool_call_tree(ids) and err == ""


def test_the_tree_of_a_run_from_this_projects_log(tmp_path: Path, trace_tree: Run) -> None:
    # Verbose: this project's action records are there too, and passed over.
    run_chat_agent(
        {"baseLogDir": str(tmp_path), "eventLoggerType": "jsonl", "event-log.level": "verbose"}
    )
    records = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert {r["record"] for r in records} == {"event", "action"}
    ids = [r["id"] for r in records if r["record"] == "event"]
    out, err = trace_tree(tmp_path)
    assert out == tool_call_tree(ids) and err == ""

    forest = json.loads(trace_tree(tmp_path, "json")[0])
    assert forest["roots"] == [ids[0]] and forest["warnings"] == []
    root = forest["nodes"][ids[0]]
    assert root["eventType"] == "_input_event" and root["observationCount"] == 1
    assert root["upstreamEdges"] == [] and root["actions"] == [
        {"name": "start", "children": [ids[1]]}
    ]
    assert forest["nodes"][ids[1]]["upstreamEdges"] == [
        {"upstreamEventId": ids[0], "upstreamActionName": "start"}
    ]
    # The time of the record, as upstream's ISO 8601 timestamp.
    assert root["timestamp"].endswith("Z") and root["timestamp"].startswith("20")
    # Nothing of the events' content is printed.
    assert "look" not in out and "look" not in json.dumps(forest)


def test_the_command_runs_as_a_module(tmp_path: Path) -> None:
    write(tmp_path / "events-j-t-0.log", [flat("r", "_input_event"), flat("c", "C", "r", "a")])
    done = subprocess.run(
        [sys.executable, "-m", "flink_agents.cli.trace_tree", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "Trace Tree 1\n  _input_event (r)\n    [Action: a]\n      C (c)\n"


# ------------------------------------------------------------- files and their errors


@pytest.mark.parametrize("missing", ["nowhere", "empty-dir"])
def test_no_event_log_is_a_clear_error(
    tmp_path: Path, missing: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / missing
    if missing == "empty-dir":
        path.mkdir()
        (path / "taskmanager.log").write_text("not an event log")
    with pytest.raises(SystemExit) as exited:
        main([str(path)])
    assert exited.value.code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"flink-agents-trace-tree: error: No Event Log files found at {path}\n"


def test_directory_files_in_name_order(tmp_path: Path) -> None:
    for name in ("events-b-t-0.log", "events-a-t-1.log", "events.jsonl", "events-2.jsonl"):
        (tmp_path / name).write_text("")
    (tmp_path / "other.log").write_text("")
    (tmp_path / "events-x.txt").write_text("")
    assert [p.name for p in find_log_files(tmp_path)] == [
        "events-2.jsonl",
        "events-a-t-1.log",
        "events-b-t-0.log",
        "events.jsonl",
    ]


def test_a_torn_record_is_a_warning_and_the_rest_is_kept(tmp_path: Path, trace_tree: Run) -> None:
    log = tmp_path / "events-j-t-0.log"
    log.write_text(
        json.dumps(flat("r", "_input_event"))
        + "\n"
        + '{"eventId": oops}\n'
        + json.dumps(flat("c", "C", "r", "a"), indent=2)  # indented (prettyPrint) records too
        + '\n{"eventId":'
    )
    out, err = trace_tree(log, "json")
    forest = json.loads(out)
    assert forest["roots"] == ["r"]
    assert forest["nodes"]["r"]["actions"] == [{"name": "a", "children": ["c"]}]
    assert forest["warnings"] == [
        {
            "code": "MALFORMED_RECORD",
            "message": f"Could not decode an Event Log record in {log} at line 2, column 13: "
            "Expecting value.",
            "filePath": str(log),
            "lineNumber": 2,
            "columnNumber": 13,
        },
        {
            "code": "MALFORMED_RECORD",
            "message": f"Could not decode an Event Log record in {log} at line 12, column 12: "
            "Expecting value.",
            "filePath": str(log),
            "lineNumber": 12,
            "columnNumber": 12,
        },
    ]
    assert err.count("[MALFORMED_RECORD] Could not decode") == 2


def test_an_unreadable_file_is_a_warning_and_other_files_are_read(
    tmp_path: Path, trace_tree: Run
) -> None:
    bad = tmp_path / "events-1-t-0.log"
    bad.write_bytes(b"\xff\xfe")
    write(tmp_path / "events-2-t-0.log", [flat("r", "_input_event")])
    out, err = trace_tree(tmp_path, "json")
    forest = json.loads(out)
    assert forest["roots"] == ["r"]
    assert forest["warnings"] == [
        {
            "code": "UNREADABLE_FILE",
            "message": f"Could not read Event Log file {bad}.",
            "filePath": str(bad),
        }
    ]
    assert err == f"[UNREADABLE_FILE] Could not read Event Log file {bad}.\n"


@pytest.mark.parametrize(
    ("record", "event_id", "reason"),
    [
        ([], None, "record must be a JSON object"),
        ({}, None, "field 'event' must be a JSON object"),
        ({"eventId": "", "eventType": "T", "eventAttributes": {}}, None, "field 'eventId'"),
        ({"eventId": "x", "eventType": 7, "eventAttributes": {}}, "x", "field 'eventType'"),
        ({"eventId": "x", "eventType": "T", "eventAttributes": []}, "x", "eventAttributes"),
        (
            {"eventId": "x", "eventType": "T", "eventAttributes": {}, "upstreamEventId": 1},
            "x",
            "field 'upstreamEventId' must be a string or null",
        ),
        ({"eventType": "T", "event": {"attributes": {}}}, None, "field 'event.id'"),
        ({"record": "event", "id": "x", "type": "T", "attributes": 3}, "x", "'attributes'"),
        (
            {"record": "event", "id": "x", "type": "T", "attributes": {}, "upstream_event_id": 2},
            "x",
            "field 'upstream_event_id' must be a string or null",
        ),
    ],
)
def test_an_invalid_record_is_a_warning(
    tmp_path: Path, trace_tree: Run, record: Any, event_id: str | None, reason: str
) -> None:
    log = write(tmp_path / "events.log", [flat("r", "_input_event"), record])
    forest = json.loads(trace_tree(log, "json")[0])
    assert forest["roots"] == ["r"] and list(forest["nodes"]) == ["r"]
    (warning,) = forest["warnings"]
    assert warning["code"] == "MALFORMED_RECORD" and warning.get("eventId") == event_id
    assert warning["message"].startswith(f"Invalid Event Log record in {log}: ")
    assert reason in warning["message"]


# ------------------------------------------------------------------ the three shapes


def test_flat_nested_and_this_projects_records_make_one_tree(
    tmp_path: Path, trace_tree: Run
) -> None:
    nested = {
        "timestamp": "2026-01-02T03:04:06Z",
        "eventType": "C",
        "event": {
            "id": "c",
            "attributes": {"n": 1},
            "upstreamEventId": "r",
            "upstreamActionName": "a",
        },
    }
    ours = {
        "record": "event",
        "ts": 0.5,
        "key": "k",
        "seq": 0,
        "id": "o",
        "type": "_output_event",
        "upstream_event_id": "c",
        "upstream_action_name": "b",
        "attributes": {},
    }
    log = write(
        tmp_path / "events.log",
        [flat("r", "_input_event"), nested, flat("c", "C", "r", "a", {"n": 1}), ours],
    )
    forest = json.loads(trace_tree(log, "json")[0])
    assert forest["warnings"] == []
    assert forest["nodes"]["c"]["observationCount"] == 2
    assert forest["nodes"]["c"]["timestamp"] == "2026-01-02T03:04:06Z"  # the first record's
    assert forest["nodes"]["o"]["timestamp"] == "1970-01-01T00:00:00.500Z"
    out = trace_tree(log)[0]
    assert out.splitlines()[-2:] == ["        [Action: b]", "          _output_event (o)"]


def test_execution_lifecycle_records_are_not_in_the_tree(tmp_path: Path, trace_tree: Run) -> None:
    def lifecycle(event_id: str, event_type: str, status: str) -> dict[str, Any]:
        return flat(
            event_id,
            event_type,
            inputRunId="run",
            executionId=f"x-{event_id}",
            entityType="action",
            entityName="a",
            status=status,
        )

    log = write(
        tmp_path / "events.log",
        [
            flat("r", "_input_event"),
            lifecycle("s", "_execution_started_event", "started"),
            lifecycle("f", "_execution_finished_event", "success"),
            lifecycle("e", "_execution_failed_event", "failed"),
            lifecycle("u", "_execution_reused_event", "reused"),
            # A reserved type without the lifecycle fields: kept, with a warning.
            flat("b", "_execution_started_event", "r", "a"),
        ],
    )
    out, err = trace_tree(log, "json")
    forest = json.loads(out)
    assert list(forest["nodes"]) == ["r", "b"]
    assert [w["code"] for w in forest["warnings"]] == ["RESERVED_EVENT_TYPE"]
    assert err.startswith("[RESERVED_EVENT_TYPE] Event b uses reserved execution lifecycle")


# ---------------------------------------------------------------- lineage problems


def test_a_replayed_event_is_one_node_shared_by_two_trees(tmp_path: Path, trace_tree: Run) -> None:
    log = write(
        tmp_path / "events.log",
        [
            flat("r1", "_input_event"),
            flat("r2", "_input_event"),
            flat("s", "_output_event", "r1", "a"),
            flat("s", "_output_event", "r1", "a"),
            flat("s", "_output_event", "r2", "a"),
        ],
    )
    forest = json.loads(trace_tree(log, "json")[0])
    assert forest["roots"] == ["r1", "r2"] and forest["warnings"] == []
    assert forest["nodes"]["s"]["observationCount"] == 3
    assert forest["nodes"]["s"]["upstreamEdges"] == [
        {"upstreamEventId": "r1", "upstreamActionName": "a"},
        {"upstreamEventId": "r2", "upstreamActionName": "a"},
    ]
    assert trace_tree(log)[0] == (
        "Trace Tree 1\n  _input_event (r1)\n    [Action: a]\n      _output_event (s)\n"
        "\n"
        "Trace Tree 2\n  _input_event (r2)\n    [Action: a]\n      _output_event (s)\n"
    )


def test_lineage_problems_are_warnings(tmp_path: Path, trace_tree: Run) -> None:
    log = write(
        tmp_path / "events.log",
        [
            flat("r", "_input_event"),
            flat("bad-root", "_input_event", "r", "a"),
            flat("orphan", "C"),
            flat("no-action", "C", "r"),
            flat("lost", "C", "gone", "a"),
            flat("x", "C", "r", "a", {"v": 1}),
            flat("x", "C", "r", "b", {"v": "1"}),  # same id, other content
            # A cycle: y -> z -> y.
            flat("y", "C", "z", "a"),
            flat("z", "C", "y", "a"),
        ],
    )
    out, err = trace_tree(log, "json")
    forest = json.loads(out)
    codes = [w["code"] for w in forest["warnings"]]
    assert codes == [
        "EVENT_ID_CONFLICT",
        "INVALID_ROOT_LINEAGE",
        "UNLINKED_EVENT",
        "MISSING_ACTION_NAME",
        "MISSING_PARENT",
        "CYCLE_DETECTED",
    ]
    conflict = forest["warnings"][0]
    assert conflict == {
        "code": "EVENT_ID_CONFLICT",
        "eventId": "x",
        "message": "Event ID x has inconsistent Event type or content across 2 records. "
        "Conflicting observation records lineage from r to x through Action b; that "
        "observation does not contribute lineage to the canonical Event node.",
        "upstreamEventId": "r",
        "upstreamActionName": "b",
    }
    cycle = forest["warnings"][-1]
    assert cycle == {
        "code": "CYCLE_DETECTED",
        "eventId": "y",
        "message": "Lineage edge from z to y through Action a creates a cycle.",
        "upstreamEventId": "z",
        "upstreamActionName": "a",
    }
    assert forest["nodes"]["z"]["actions"] == []
    assert forest["nodes"]["y"]["upstreamEdges"] == []
    assert forest["nodes"]["r"]["actions"] == [{"name": "a", "children": ["x"]}]
    assert forest["roots"] == ["r"]
    assert err.count("\n") == 6


def test_a_deep_chain_prints_without_recursion(tmp_path: Path, trace_tree: Run) -> None:
    depth = sys.getrecursionlimit() + 100
    records = [flat("e0", "_input_event")]
    records += [flat(f"e{i}", "C", f"e{i - 1}", "a") for i in range(1, depth)]
    out = trace_tree(write(tmp_path / "events.log", records))[0]
    assert out.splitlines()[-1].strip() == f"C (e{depth - 1})"


def test_the_command_is_installed_under_upstreams_name() -> None:
    (script,) = entry_points(group="console_scripts", name="flink-agents-trace-tree")
    assert script.value == "flink_agents.cli.trace_tree:main"
