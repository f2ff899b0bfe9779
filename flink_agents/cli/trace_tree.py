"""Rebuild the InputEvent-rooted trace trees of an event log (upstream's ``trace_tree``).

``python -m flink_agents.cli.trace_tree PATH [--format text|json]``, installed as the
``flink-agents-trace-tree`` command, reads one event log file, or every event log file of
a directory in file-name order (upstream's ``events-*.log``, this project's
``events.jsonl`` and ``events-*.jsonl``; other files are not read), and prints one tree
per root ``InputEvent``: under each event the actions it triggered, under each action the
events that action sent. ``--format json`` prints ``roots``, ``nodes`` and ``warnings``
instead.

Three record shapes are read, mixed freely in one file:

- upstream's flat record (``eventId``, ``eventType``, ``upstreamEventId``,
  ``upstreamActionName``, ``eventAttributes``), which this project writes with
  ``baseLogDir`` (or ``eventLoggerType: file``);
- upstream's earlier nested record (``eventType`` and ``event`` with ``id``,
  ``attributes``, ``upstreamEventId``, ``upstreamActionName``);
- this project's JSON-lines record (``eventLoggerType: jsonl``; ``record: "event"``
  with ``id``, ``type``, ``upstream_event_id``, ``upstream_action_name``,
  ``attributes``); its ``action`` records (``verbose`` level) are not events and are
  passed over.

Upstream's execution lifecycle records (``_execution_*_event`` with their status and
execution identity) are not part of the trees. An action is not a record of its own: its
node is the ``upstreamActionName`` of the events it sent. One event id seen in several
records (a replay) is one node with every distinct upstream edge, so the result may be a
DAG. A problem never stops the reader: it becomes a warning (a code and a message, on
standard error and in the JSON output) and the valid part of the trees is printed. Only a
path without any event log file is an error (exit status 1).

Nothing of an event's attributes is printed: they only tell whether two records of one
event id agree.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = [
    "INPUT_EVENT_TYPE",
    "EventRecord",
    "build_trace_forest",
    "find_log_files",
    "main",
    "read_event_records",
    "read_json_objects",
    "render_text",
    "warning",
]

INPUT_EVENT_TYPE = "_input_event"
"""The type of a tree's root."""

_LIFECYCLE_STATUS: dict[str, str] = {
    "_execution_started_event": "started",
    "_execution_finished_event": "success",
    "_execution_failed_event": "failed",
    "_execution_reused_event": "reused",
}
"""Upstream's execution lifecycle event types (reserved) and the status each carries."""

_LOG_FILE_PATTERNS = ("events-*.log", "events.jsonl", "events-*.jsonl")
"""Event log files in a directory: upstream's, then this project's."""

Edge = tuple[str | None, str | None]
"""An upstream edge: (upstream event id, upstream action name)."""


@dataclass(frozen=True)
class EventRecord:
    """One record of an event, whatever its shape in the file."""

    event_id: str
    event_type: str
    timestamp: Any
    """As recorded (upstream: an ISO 8601 string; this project's ``ts`` becomes one)."""
    upstream_event_id: str | None
    upstream_action_name: str | None
    attributes: dict[str, Any]

    @property
    def edge(self) -> Edge:
        return (self.upstream_event_id, self.upstream_action_name)


def warning(
    code: str,
    event_id: str | None,
    message: str,
    *,
    file_path: Path | None = None,
    line_number: int | None = None,
    column_number: int | None = None,
    upstream_event_id: str | None = None,
    upstream_action_name: str | None = None,
) -> dict[str, Any]:
    """One reconstruction warning as it appears in the JSON output (absent fields left out)."""
    fields: list[tuple[str, Any]] = [
        ("code", code),
        ("eventId", event_id),
        ("message", message),
        ("filePath", None if file_path is None else str(file_path)),
        ("lineNumber", line_number),
        ("columnNumber", column_number),
        ("upstreamEventId", upstream_event_id),
        ("upstreamActionName", upstream_action_name),
    ]
    return {name: value for name, value in fields if value is not None}


# ------------------------------------------------------------------------------ reading


def find_log_files(path: Path) -> list[Path]:
    """``path`` itself when it is a file, else the event log files in it by name."""
    if path.is_file():
        return [path]
    found = {file for pattern in _LOG_FILE_PATTERNS for file in path.glob(pattern)}
    return sorted(file for file in found if file.is_file())


def read_json_objects(path: Path, warnings: list[dict[str, Any]]) -> Iterator[Any]:
    """The JSON values of one file, one after another (one per line, or indented).

    A value that does not parse is a ``MALFORMED_RECORD`` warning and reading goes on at
    the next line that starts with ``{``; an unreadable file is an ``UNREADABLE_FILE``
    warning.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError):
        warnings.append(
            warning(
                "UNREADABLE_FILE", None, f"Could not read Event Log file {path}.", file_path=path
            )
        )
        return
    decoder = json.JSONDecoder()
    end = len(text)
    at = 0
    while True:
        while at < end and text[at].isspace():
            at += 1
        if at >= end:
            return
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as error:
            warnings.append(
                warning(
                    "MALFORMED_RECORD",
                    None,
                    f"Could not decode an Event Log record in {path} at line "
                    f"{error.lineno}, column {error.colno}: {error.msg}.",
                    file_path=path,
                    line_number=error.lineno,
                    column_number=error.colno,
                )
            )
            resume = text.find("\n{", max(error.pos, at + 1))
            if resume < 0:
                return
            at = resume + 1
            continue
        yield value


def _iso_time(ts: Any) -> Any:
    """This project's ``ts`` (seconds since the epoch) as upstream's ISO 8601 timestamp."""
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        moment = datetime.fromtimestamp(ts, tz=timezone.utc)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return ts


class _Skip(Exception):
    """A record that is not an event (this project's ``action`` records)."""


class _Invalid(Exception):
    def __init__(self, reason: str, event_id: str | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.event_id = event_id


@dataclass(frozen=True)
class _Shape:
    """Where one record shape keeps an event's fields (names as the warnings show them)."""

    nested: bool
    """The event's fields are in the record's ``event`` object (upstream's earlier shape)."""
    event_id: str
    event_type: str
    attributes: str
    upstream_event_id: str
    upstream_action_name: str


_FLAT = _Shape(
    False, "eventId", "eventType", "eventAttributes", "upstreamEventId", "upstreamActionName"
)
_NESTED = _Shape(
    True,
    "event.id",
    "eventType",
    "event.attributes",
    "event.upstreamEventId",
    "event.upstreamActionName",
)
_OURS = _Shape(False, "id", "type", "attributes", "upstream_event_id", "upstream_action_name")


def _shape(record: dict[str, Any]) -> _Shape:
    if record.get("record") in ("event", "action") and "eventType" not in record:
        if record["record"] == "action":
            raise _Skip
        return _OURS
    if "eventId" in record or "eventAttributes" in record:
        return _FLAT
    if not isinstance(record.get("event"), dict):
        raise _Invalid("field 'event' must be a JSON object", None)
    return _NESTED


def _event_record(record: Any) -> EventRecord:
    """The event of one record in any of the three shapes; `_Invalid` or `_Skip`."""
    if not isinstance(record, dict):
        raise _Invalid("record must be a JSON object", None)
    shape = _shape(record)  # pyright: ignore[reportUnknownArgumentType]
    fields: dict[str, Any] = record["event"] if shape.nested else record

    def value(name: str) -> Any:
        return fields.get(name.rpartition(".")[2])

    event_id = value(shape.event_id)
    if not isinstance(event_id, str) or not event_id:
        raise _Invalid(f"field '{shape.event_id}' must be a non-empty string", None)
    event_type = record.get(shape.event_type)
    if not isinstance(event_type, str) or not event_type:
        raise _Invalid(f"field '{shape.event_type}' must be a non-empty string", event_id)
    attributes = value(shape.attributes)
    if not isinstance(attributes, dict):
        raise _Invalid(f"field '{shape.attributes}' must be a JSON object", event_id)
    upstream: list[str | None] = []
    for name in (shape.upstream_event_id, shape.upstream_action_name):
        each = value(name)
        if each is not None and not isinstance(each, str):
            raise _Invalid(f"field '{name}' must be a string or null", event_id)
        upstream.append(each)
    timestamp = _iso_time(record.get("ts")) if shape is _OURS else record.get("timestamp")
    return EventRecord(
        event_id=event_id,
        event_type=event_type,
        timestamp=timestamp,
        upstream_event_id=upstream[0],
        upstream_action_name=upstream[1],
        attributes=attributes,  # pyright: ignore[reportUnknownArgumentType]
    )


def _is_lifecycle_record(record: dict[str, Any]) -> bool:
    """Whether a record is one of upstream's execution lifecycle records (type, status and
    execution identity all present)."""
    status = _LIFECYCLE_STATUS.get(record.get("eventType"))  # pyright: ignore[reportArgumentType]
    return (
        status is not None
        and record.get("status") == status
        and all(
            isinstance(record.get(name), str) and record[name]
            for name in ("executionId", "entityType", "entityName")
        )
    )


def read_event_records(path: Path, warnings: list[dict[str, Any]]) -> Iterator[EventRecord]:
    """The events of the event log at ``path`` (a file or a directory), in file order.

    Raises ``FileNotFoundError`` when there is no event log file there; invalid records
    are ``MALFORMED_RECORD`` warnings, business events of a reserved lifecycle type
    ``RESERVED_EVENT_TYPE`` warnings (and kept).
    """
    files = find_log_files(path)
    if not files:
        raise FileNotFoundError(f"No Event Log files found at {path}")
    for file in files:
        for record in read_json_objects(file, warnings):
            try:
                event = _event_record(record)
            except _Skip:
                continue
            except _Invalid as invalid:
                warnings.append(
                    warning(
                        "MALFORMED_RECORD",
                        invalid.event_id,
                        f"Invalid Event Log record in {file}: {invalid.reason}.",
                        file_path=file,
                    )
                )
                continue
            if _is_lifecycle_record(record):
                continue
            if event.event_type in _LIFECYCLE_STATUS:
                warnings.append(
                    warning(
                        "RESERVED_EVENT_TYPE",
                        event.event_id,
                        f"Event {event.event_id} uses reserved execution lifecycle type "
                        f"{event.event_type} without the corresponding execution lifecycle "
                        "fields; it was retained as a business Event.",
                        file_path=file,
                    )
                )
            yield event


# ----------------------------------------------------------------------------- the trees


def _fingerprint(value: Any) -> str:
    """Equal exactly when the JSON values are (types included: 1 is not 1.0 or "1")."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _lineage_edges(
    event_id: str, records: list[EventRecord], warnings: list[dict[str, Any]]
) -> list[Edge]:
    """The distinct edges of the records of one event that agree with its first record;
    one ``EVENT_ID_CONFLICT`` warning per distinct edge of the others."""
    first = records[0]
    first_content = _fingerprint(first.attributes)
    edges: list[Edge] = []
    conflicting: set[Edge] = set()
    for record in records:
        agrees = record.event_type == first.event_type and (
            record is first or _fingerprint(record.attributes) == first_content
        )
        if agrees:
            if record.edge not in edges:
                edges.append(record.edge)
            continue
        if record.edge in conflicting:
            continue
        conflicting.add(record.edge)
        message = (
            f"Event ID {event_id} has inconsistent Event type or content across "
            f"{len(records)} records."
        )
        if record.upstream_event_id is not None and record.upstream_action_name is not None:
            message += (
                f" Conflicting observation records lineage from {record.upstream_event_id} "
                f"to {event_id} through Action {record.upstream_action_name}; that "
                "observation does not contribute lineage to the canonical Event node."
            )
        else:
            message += (
                " The conflicting observation does not contribute lineage to the canonical "
                "Event node."
            )
        warnings.append(
            warning(
                "EVENT_ID_CONFLICT",
                event_id,
                message,
                upstream_event_id=record.upstream_event_id,
                upstream_action_name=record.upstream_action_name,
            )
        )
    return edges


def _link(
    event_id: str,
    edge: Edge,
    nodes: dict[str, dict[str, Any]],
    actions: dict[tuple[str, str], dict[str, Any]],
    warnings: list[dict[str, Any]],
) -> None:
    """Put a non-input event under the action of its parent that sent it, or warn why not."""
    parent_id, action_name = edge
    if parent_id is None:
        warnings.append(
            warning("UNLINKED_EVENT", event_id, f"Non-InputEvent {event_id} has no upstream Event.")
        )
    elif action_name is None:
        warnings.append(
            warning(
                "MISSING_ACTION_NAME", event_id, f"Event {event_id} has no upstream Action name."
            )
        )
    elif parent_id not in nodes:
        warnings.append(
            warning(
                "MISSING_PARENT",
                event_id,
                f"Event {event_id} references missing parent {parent_id}.",
            )
        )
    else:
        action = actions.get((parent_id, action_name))
        if action is None:
            action = actions[(parent_id, action_name)] = {"name": action_name, "children": []}
            nodes[parent_id]["actions"].append(action)
        action["children"].append(event_id)


def build_trace_forest(
    records: Iterable[EventRecord], warnings: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """``{"roots": [...], "nodes": {...}, "warnings": [...]}`` from the records.

    A node per event id (its first record gives its type and timestamp), roots are the
    input events without lineage, an edge that closes a cycle is left out (with a
    ``CYCLE_DETECTED`` warning); ``warnings`` (when given) receives the warnings and is
    the returned list.
    """
    warnings = [] if warnings is None else warnings
    by_id: dict[str, list[EventRecord]] = {}
    for record in records:
        by_id.setdefault(record.event_id, []).append(record)

    nodes: dict[str, dict[str, Any]] = {}
    edges_of: dict[str, list[Edge]] = {}
    for event_id, observed in by_id.items():
        edges = edges_of[event_id] = _lineage_edges(event_id, observed, warnings)
        nodes[event_id] = {
            "eventId": event_id,
            "eventType": observed[0].event_type,
            "timestamp": observed[0].timestamp,
            "observationCount": len(observed),
            "upstreamEdges": [
                {"upstreamEventId": parent, "upstreamActionName": action}
                for parent, action in edges
                if (parent, action) != (None, None)
            ],
            "actions": [],
        }

    roots: list[str] = []
    actions: dict[tuple[str, str], dict[str, Any]] = {}
    for event_id, node in nodes.items():
        is_input = node["eventType"] == INPUT_EVENT_TYPE
        for edge in edges_of[event_id]:
            if not is_input:
                _link(event_id, edge, nodes, actions, warnings)
            elif edge == (None, None):
                roots.append(event_id)
            else:
                warnings.append(
                    warning(
                        "INVALID_ROOT_LINEAGE",
                        event_id,
                        f"InputEvent {event_id} must not have upstream lineage.",
                    )
                )

    _prune_cycles(nodes, roots, warnings)
    return {"roots": roots, "nodes": nodes, "warnings": warnings}


def _prune_cycles(
    nodes: dict[str, dict[str, Any]], roots: list[str], warnings: list[dict[str, Any]]
) -> None:
    """Leave out each edge that closes a cycle (found by a depth-first walk in a stable
    order: roots, then the other events, each by id; children by action name and id),
    from the parent's actions and the child's upstream edges alike."""

    def children(event_id: str) -> Iterator[tuple[str, str]]:
        pairs = [(a["name"], child) for a in nodes[event_id]["actions"] for child in a["children"]]
        return iter(sorted(pairs))

    root_set = set(roots)
    order = sorted(root_set) + sorted(event_id for event_id in nodes if event_id not in root_set)
    done: set[str] = set()
    on_path: set[str] = set()
    cut: set[tuple[str, str, str]] = set()
    for start in order:
        if start in done:
            continue
        on_path.add(start)
        stack = [(start, children(start))]
        while stack:
            parent, pending = stack[-1]
            step = next(pending, None)
            if step is None:
                stack.pop()
                on_path.discard(parent)
                done.add(parent)
                continue
            action_name, child = step
            if child in on_path:
                cut.add((parent, action_name, child))
                warnings.append(
                    warning(
                        "CYCLE_DETECTED",
                        child,
                        f"Lineage edge from {parent} to {child} through Action {action_name} "
                        "creates a cycle.",
                        upstream_event_id=parent,
                        upstream_action_name=action_name,
                    )
                )
            elif child not in done:
                on_path.add(child)
                stack.append((child, children(child)))
    if not cut:
        return
    for parent, action_name, child in cut:
        nodes[child]["upstreamEdges"] = [
            e
            for e in nodes[child]["upstreamEdges"]
            if (e["upstreamEventId"], e["upstreamActionName"]) != (parent, action_name)
        ]
    for parent, node in nodes.items():
        for action in node["actions"]:
            action["children"] = [
                c for c in action["children"] if (parent, action["name"], c) not in cut
            ]
        node["actions"] = [a for a in node["actions"] if a["children"]]


# ------------------------------------------------------------------------------- output


def render_text(trace_forest: dict[str, Any]) -> str:
    """The trees as indented text: ``Trace Tree N``, then each event as ``type (id)`` with
    its actions as ``[Action: name]`` under it and their events under those."""
    nodes: dict[str, dict[str, Any]] = trace_forest["nodes"]
    lines: list[str] = []
    for number, root in enumerate(trace_forest["roots"], start=1):
        if lines:
            lines.append("")
        lines.append(f"Trace Tree {number}")
        # Iterative (a chain of events may be deeper than Python's recursion limit);
        # an event already on the path is not entered again.
        on_path: set[str] = set()
        stack: list[tuple[str, Any, str]] = [("event", root, "  ")]
        while stack:
            kind, item, indent = stack.pop()
            if kind == "leave":
                on_path.discard(item)
            elif kind == "action":
                lines.append(f"{indent}  [Action: {item['name']}]")
                stack.extend(("event", c, indent + "    ") for c in reversed(item["children"]))
            elif item not in on_path:
                on_path.add(item)
                node = nodes[item]
                lines.append(f"{indent}{node['eventType']} ({item})")
                stack.append(("leave", item, indent))
                stack.extend(("action", a, indent) for a in reversed(node["actions"]))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """The command: warnings to standard error, the trees to standard output."""
    parser = argparse.ArgumentParser(
        prog="flink-agents-trace-tree",
        description="Reconstruct InputEvent-rooted Trace Trees from an Event Log.",
    )
    parser.add_argument("path", type=Path, help="Event Log file or directory")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)

    warnings: list[dict[str, Any]] = []
    try:
        forest = build_trace_forest(read_event_records(args.path, warnings), warnings)
    except FileNotFoundError as missing:
        parser.exit(1, f"{parser.prog}: error: {missing}\n")
    for item in forest["warnings"]:
        print(f"[{item['code']}] {item['message']}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(forest, indent=2))
    else:
        print(render_text(forest))


if __name__ == "__main__":
    main()
