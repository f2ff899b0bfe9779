"""The event log: JSON lines with lineage, media redacted, levels."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api import (
    AudioBlock,
    ChatMessage,
    Event,
    EventLogLevel,
    FunctionChatModelConnection,
    ImageBlock,
    InputEvent,
    MessageRole,
    TextBlock,
    ToolCallBlock,
    ToolMetadata,
)
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.events.tool_event import ToolResponseEvent
from flink_agents.api.redaction import clear_registered_secrets, register_secret
from flink_agents.api.tool_response import ToolResponse
from flink_agents.runtime import event_log
from flink_agents.runtime.event_log import EventLog, file_event_log_name, sanitize_json
from flink_agents.runtime.local_runner import LocalExecutionEnvironment
from tests.runtime.chat_agents import chat_agent

SECRET_PIXELS = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"secret-pixels" * 20).decode("ascii")
SECRET_URL = "https://files.example.com/private/scan.png?token=abc123"


def photo_tool() -> ImageBlock:
    """Take a photo."""
    return ImageBlock(mime_type="image/png", data=SECRET_PIXELS, name="photo.png")


def vision(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    if messages[-1].role is MessageRole.USER:
        return ChatMessage.assistant(tool_calls=[ToolCallBlock(id="p1", name="photo_tool")])
    return "x" * 50


def run_logged(tmp_path: Path, level: str) -> list[dict[str, Any]]:
    env = LocalExecutionEnvironment(
        {
            "baseLogDir": str(tmp_path),
            "eventLoggerType": "jsonl",
            "event-log.level": level,
            "event-log.standard.max-string-length": 20,
        }
    )
    user = ChatMessage.user(
        [TextBlock(text="look"), ImageBlock(mime_type="image/png", url=SECRET_URL)]
    )
    agent = chat_agent(
        FunctionChatModelConnection(function=vision), tools={"photo_tool": photo_tool}
    )
    env.from_list([{"key": "cam-1", "value": [user]}]).apply(agent)
    env.execute()
    path = tmp_path / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_standard_log_has_lineage_and_no_media(tmp_path: Path) -> None:
    records = run_logged(tmp_path, "standard")
    text = (tmp_path / "events.jsonl").read_text()
    assert SECRET_PIXELS not in text and "secret-pixels" not in text
    assert SECRET_URL not in text and "token=abc123" not in text

    assert {r["record"] for r in records} == {"event"}
    types = [r["type"] for r in records]
    assert types == [
        "_input_event",
        "_chat_request_event",
        "_tool_request_event",
        "_tool_response_event",
        "_chat_response_event",
        "_output_event",
    ]
    assert all(r["key"] == "cam-1" and r["seq"] == 0 for r in records)
    ids = {r["id"] for r in records}
    assert records[0]["upstream_event_id"] is None
    for record in records[1:]:
        assert record["upstream_event_id"] in ids
        assert record["upstream_action_name"]

    # Media kept their descriptive fields, marked redacted.
    request = records[1]["attributes"]["messages"][0]["blocks"][1]
    assert request == {
        "type": "image",
        "mime_type": "image/png",
        "data": None,
        "url": None,
        "name": None,
        "size_bytes": None,
        "sha256": None,
        "redacted": True,
    }
    tool_image = records[3]["attributes"]["responses"][0]["content"][0]
    assert tool_image["redacted"] is True and tool_image["name"] == "photo.png"
    assert tool_image["size_bytes"] == len(base64.b64decode(SECRET_PIXELS))
    # Long strings are truncated at the standard level.
    answer = records[4]["attributes"]["response"]["blocks"][0]["text"]
    assert answer == "x" * 20 + "...<30 more chars>"


def test_verbose_log_keeps_strings_and_adds_action_records(tmp_path: Path) -> None:
    records = run_logged(tmp_path, "verbose")
    text = (tmp_path / "events.jsonl").read_text()
    assert SECRET_PIXELS not in text and SECRET_URL not in text
    events = [r for r in records if r["record"] == "event"]
    actions = [r for r in records if r["record"] == "action"]
    assert events[4]["attributes"]["response"]["blocks"][0]["text"] == "x" * 50
    assert [a["action"] for a in actions] == [
        "start",
        "_chat_model_action",
        "_tool_call_action",
        "_chat_model_action",
        "finish",
    ]
    assert all(a["duration_ms"] >= 0 and a["error"] is None for a in actions)
    assert actions[0]["sent_event_ids"] == [events[1]["id"]]


def test_a_record_is_in_the_file_as_soon_as_it_is_logged(tmp_path: Path) -> None:
    log = EventLog.for_directory(tmp_path)
    try:
        log.log_event("u1", 0, InputEvent(input="hi"))
        lines = (tmp_path / "events.jsonl").read_text().splitlines()
        assert [json.loads(line)["type"] for line in lines] == ["_input_event"]
    finally:
        log.close()


def test_log_file_and_directories_it_makes_are_private(tmp_path: Path, umask_022: None) -> None:
    log = EventLog.for_directory(tmp_path / "logs" / "agent")
    try:
        log.log_event("u1", 0, InputEvent(input="hi"))
    finally:
        log.close()
    assert stat.S_IMODE((tmp_path / "logs" / "agent" / "events.jsonl").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "logs" / "agent").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "logs").stat().st_mode) == 0o700


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask (022), under which a plain open() makes a file world-readable."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_off_writes_nothing(tmp_path: Path) -> None:
    assert run_logged(tmp_path, "off") == []
    assert not (tmp_path / "events.jsonl").exists()


def test_sanitize_json_redacts_everywhere() -> None:
    data_uri = "data:image/png;base64," + SECRET_PIXELS
    value = {
        "nested": [{"type": "audio", "mime_type": "audio/wav", "url": SECRET_URL}],
        "uri": data_uri,
        "message": ChatMessage.user(
            [AudioBlock(mime_type="audio/wav", data=SECRET_PIXELS)]
        ).model_dump(mode="json"),
        "not_media": {"type": "image", "caption": "kept"},
    }
    clean = sanitize_json(value)
    dumped = json.dumps(clean)
    assert SECRET_PIXELS not in dumped and SECRET_URL not in dumped
    size = len(base64.b64decode(SECRET_PIXELS))
    assert clean["uri"] == f"data:image/png;base64,<{size} bytes redacted>"
    assert clean["nested"][0]["redacted"] is True
    assert clean["message"]["blocks"][0]["redacted"] is True
    assert clean["not_media"] == {"type": "image", "caption": "kept"}


def test_event_log_on_a_stream() -> None:
    stream = io.StringIO()
    log = EventLog(stream, EventLogLevel.STANDARD)
    event = InputEvent(input={"k": 1})
    log.log_event(("tuple", "key"), 3, event)
    log.log_action("k", 3, "a", str(event.id), 0.001, [])  # standard: no action records
    record = json.loads(stream.getvalue())
    assert (
        record["seq"] == 3
        and record["id"] == str(event.id)
        and record["attributes"] == {"input": {"k": 1}}
    )
    log.close()
    log.log_event("k", 0, Event("t"))  # closed: ignored
    assert len(stream.getvalue().splitlines()) == 1


# --------------------------------------------------------------------- redaction per level

PLAIN_KEY = "ak-live-Zq81LmPq04XyTt7Rw3"
PNG_B64 = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8).decode("ascii")


@pytest.fixture
def registered_key() -> Iterator[str]:
    clear_registered_secrets()
    register_secret(PLAIN_KEY)
    yield PLAIN_KEY
    clear_registered_secrets()


def _logged(level: EventLogLevel, event: Event, max_string_length: int = 2000) -> str:
    stream = io.StringIO()
    log = EventLog(stream, level, max_string_length=max_string_length)
    log.log_event("k", 0, event)
    log.log_action("k", 0, "act", event.id, 0.01, [], error=f"boom api_key={PLAIN_KEY}")
    return stream.getvalue()


@pytest.mark.parametrize("level", [EventLogLevel.STANDARD, EventLogLevel.VERBOSE])
def test_payloads_inside_strings_are_redacted_at_every_level(
    level: EventLogLevel, registered_key: str
) -> None:
    big = base64.b64encode(b"\x00\x01\x02" * 3_500_000).decode("ascii")  # 14 MB
    event = InputEvent(
        input={
            "note": f"see data:image/png;base64,{PNG_B64} inline",
            "raw": PNG_B64[:1900],
            "huge": big,
            "nested": [{"blob": PNG_B64}, ("tuple", f"key {registered_key}")],
            "password": "hunter2hunter2",
        }
    )
    text = _logged(level, event)
    assert PNG_B64[:200] not in text and big[:200] not in text and registered_key not in text
    assert "hunter2" not in text
    record = json.loads(text.splitlines()[0])
    size = len(base64.b64decode(PNG_B64))
    assert record["attributes"]["input"] == {
        "note": f"see data:image/png;base64,<{size} bytes redacted> inline",
        "raw": "<base64, 1900 chars redacted>",
        "huge": f"<base64, {len(big)} chars redacted>",
        "nested": [
            {"blob": f"<base64, {len(PNG_B64)} chars redacted>"},
            {"$tuple": ["tuple", "key ***7Rw3"]},  # attributes in their JSON form
        ],
        "password": "***",
    }
    if level is EventLogLevel.VERBOSE:
        action = json.loads(text.splitlines()[1])
        assert action["error"] == "boom api_key=***7Rw3"


def test_a_failed_tool_response_is_logged_without_the_secret(registered_key: str) -> None:
    failure = ToolResponse.failure(
        "c1", "fetch", f"tool 'fetch' failed: RuntimeError: auth {registered_key} rejected"
    )
    text = _logged(EventLogLevel.VERBOSE, ToolResponseEvent(request_id="r", responses=[failure]))
    assert registered_key not in text
    record = json.loads(text.splitlines()[0])
    assert record["attributes"]["responses"][0]["error"] == (
        "tool 'fetch' failed: RuntimeError: auth ***7Rw3 rejected"
    )


# ------------------------------------------------------------- upstream's file event log

UPSTREAM_FILE = re.compile(r"^events-([0-9a-f]{32})-local-runner-0\.log$")


def run_upstream_logged(directory: Path, **options: Any) -> Path:
    """The chat agent with its tool call on the local runner under ``eventLoggerType: file``;
    the one file it wrote."""
    env = LocalExecutionEnvironment(
        {"baseLogDir": str(directory), "eventLoggerType": "file", **options}
    )
    user = ChatMessage.user(
        [TextBlock(text="look"), ImageBlock(mime_type="image/png", url=SECRET_URL)]
    )
    agent = chat_agent(
        FunctionChatModelConnection(function=vision), tools={"photo_tool": photo_tool}
    )
    env.from_list([{"key": "cam-1", "value": [user]}]).apply(agent)
    env.execute()
    (path,) = directory.iterdir()
    return path


def test_logger_type_file_writes_upstreams_layout_and_records(
    tmp_path: Path, umask_022: None
) -> None:
    path = run_upstream_logged(tmp_path / "logs", **{"event-log.standard.max-string-length": 20})
    assert UPSTREAM_FILE.match(path.name)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    text = path.read_text()
    assert SECRET_PIXELS not in text and "secret-pixels" not in text
    assert SECRET_URL not in text and "token=abc123" not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert [r["eventType"] for r in records] == [
        "_input_event",
        "_chat_request_event",
        "_tool_request_event",
        "_tool_response_event",
        "_chat_response_event",
        "_output_event",
    ]
    root, request = records[0], records[1]
    # Upstream's flat record: its fields in its order; no lineage fields on the root.
    assert list(root) == ["timestamp", "logLevel", "eventId", "eventType", "eventAttributes"]
    assert list(request) == [
        "timestamp",
        "logLevel",
        "eventId",
        "eventType",
        "upstreamEventId",
        "upstreamActionName",
        "eventAttributes",
    ]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", root["timestamp"])
    assert {r["logLevel"] for r in records} == {"STANDARD"}
    assert request["upstreamEventId"] == root["eventId"]
    assert request["upstreamActionName"] == "start"
    # A tool request's calls in upstream's form (its e2e tests read function.name there).
    assert records[2]["eventAttributes"]["tool_calls"] == [
        {"id": "p1", "type": "function", "function": {"name": "photo_tool", "arguments": {}}}
    ]
    tool_image = records[3]["eventAttributes"]["responses"][0]["content"][0]
    assert tool_image["redacted"] is True and tool_image["data"] is None
    # Long strings are truncated at the standard level into upstream's wrapper.
    answer = records[4]["eventAttributes"]["response"]["blocks"][0]["text"]
    assert answer == {"truncatedString": "x" * 20 + "...", "omittedChars": 30}


def test_upstream_records_at_verbose_have_no_action_records(tmp_path: Path) -> None:
    path = run_upstream_logged(tmp_path, **{"event-log.level": "verbose"})
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(records) == 6 and {r["logLevel"] for r in records} == {"VERBOSE"}
    assert records[4]["eventAttributes"]["response"]["blocks"][0]["text"] == "x" * 50


def test_upstream_records_are_redacted(registered_key: str) -> None:
    stream = io.StringIO()
    log = EventLog(stream, EventLogLevel.VERBOSE, upstream_records=True)
    failure = ToolResponse.failure("c1", "fetch", f"auth {registered_key} rejected")
    log.log_event("k", 0, ToolResponseEvent(request_id="r", responses=[failure]))
    log.log_event("k", 0, InputEvent(input={"img": f"data:image/png;base64,{PNG_B64}"}))
    text = stream.getvalue()
    assert registered_key not in text and PNG_B64[:200] not in text
    first = json.loads(text.splitlines()[0])
    assert first["eventAttributes"]["responses"][0]["error"] == "auth ***7Rw3 rejected"


def test_logger_type_file_without_base_log_dir_uses_upstreams_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(event_log, "DEFAULT_FILE_LOG_DIR", tmp_path / "flink-agents")
    config = AgentConfiguration({"eventLoggerType": "FILE"})
    log = EventLog.from_config(config, subtask_index=3, job_id="ab12", task_name="agent -> Map")
    assert log is not None
    log.close()
    assert [p.name for p in (tmp_path / "flink-agents").iterdir()] == [
        "events-ab12-agent -_ Map-3.log"
    ]
    assert EventLog.from_config(AgentConfiguration({})) is None
    off = AgentConfiguration({"eventLoggerType": "file", "event-log.level": "off"})
    assert EventLog.from_config(off) is None


def test_file_event_log_name_is_upstreams() -> None:
    assert (
        file_event_log_name("j1", 'a/b\\c:d*e?f"g<h>i|j', 2)
        == "events-j1-a_b_c_d_e_f_g_h_i_j-2.log"
    )
    assert file_event_log_name("j1", "action-execute-operator", 0) == (
        "events-j1-action-execute-operator-0.log"
    )


@pytest.mark.parametrize("logger_type", [None, "slf4j", "SLF4J", "file"])
def test_base_log_dir_makes_the_log_upstreams_file_event_log(
    tmp_path: Path, logger_type: str | None
) -> None:
    """As upstream, ``baseLogDir`` alone (or with ``slf4j``, the default) writes upstream's
    file event log: its file name and flat records."""
    options: dict[str, Any] = {"baseLogDir": str(tmp_path)}
    if logger_type is not None:
        options["eventLoggerType"] = logger_type
    log = EventLog.from_config(AgentConfiguration(options), subtask_index=1, job_id="j1")
    assert log is not None
    try:
        log.log_event("k", 0, InputEvent(input="hi"))
    finally:
        log.close()
    (path,) = tmp_path.iterdir()
    assert path.name == "events-j1-local-runner-1.log"
    (record,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert list(record) == ["timestamp", "logLevel", "eventId", "eventType", "eventAttributes"]


def test_logger_type_jsonl_keeps_this_projects_log(tmp_path: Path) -> None:
    config = AgentConfiguration({"baseLogDir": str(tmp_path), "eventLoggerType": "jsonl"})
    for subtask, name in ((None, "events.jsonl"), (2, "events-2.jsonl")):
        log = EventLog.from_config(config, subtask_index=subtask)
        assert log is not None
        try:
            log.log_event("k", 0, InputEvent(input="hi"))
        finally:
            log.close()
        (record,) = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
        assert record["record"] == "event" and record["type"] == "_input_event"
    assert EventLog.from_config(AgentConfiguration({"eventLoggerType": "jsonl"})) is None


@pytest.mark.parametrize("upstream", [False, True])
def test_max_string_length_zero_truncates_nothing(upstream: bool) -> None:
    """As upstream, ``event-log.standard.max-string-length: 0`` turns truncation off."""
    stream = io.StringIO()
    log = EventLog(stream, EventLogLevel.STANDARD, max_string_length=0, upstream_records=upstream)
    log.log_event("k", 0, InputEvent(input="a long enough input"))
    (record,) = [json.loads(line) for line in stream.getvalue().splitlines()]
    attributes = record["eventAttributes" if upstream else "attributes"]
    assert attributes["input"] == "a long enough input"


def test_upstream_truncation_wraps_strings_at_any_depth_and_keeps_trace_fields() -> None:
    stream = io.StringIO()
    log = EventLog(
        stream,
        EventLogLevel.STANDARD,
        max_string_length=4,
        upstream_records=True,
        trace_records=True,
    )
    log.log_event("k", 0, InputEvent(input={"list": ["abcdefg", "ab"], "n": 12345678}))
    log.log_execution(
        "_execution_started_event",
        {"executionId": "e-123456789", "entityName": "a_long_name"},
        {"note": "abcdef"},
    )
    event, execution = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert event["eventAttributes"]["input"] == {
        "list": [{"truncatedString": "abcd...", "omittedChars": 3}, "ab"],
        "n": 12345678,
    }
    # Trace fields are identities: upstream never truncates them.
    assert execution["executionId"] == "e-123456789"
    assert execution["entityName"] == "a_long_name"
    assert execution["eventAttributes"] == {
        "note": {"truncatedString": "abcd...", "omittedChars": 2}
    }
