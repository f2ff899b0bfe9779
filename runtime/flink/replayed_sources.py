"""Sources that start again from their first element after a restore.

PyFlink's `env.from_collection(...)` (and any source built on Flink's legacy
`InputFormatSourceFunction`) keeps no position in checkpoints: after a restore it reads its
input again from the start, so inputs an agent had already answered arrive a second time and
get a second output. In a checkpointed job that breaks exactly-once outputs without a sign;
`warn_if_replayed` gives the sign when an agent is applied to such a stream.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["replayed_sources", "warn_if_replayed"]

_LOG = logging.getLogger(__name__)

_LEGACY_INPUT_FORMAT_SOURCE = "InputFormatSourceFunction"
_COLLECTION_FORMAT = "CollectionInputFormat"

_REPLAYED = (
    "the input of agent {agent!r} reads from {sources}: a legacy source that keeps no "
    "position in checkpoints and reads its input again from the start after a restore, so "
    "in this checkpointed job every restore gives the inputs it had already answered a "
    "second output. Use a FLIP-27 source instead: env.from_source(NumberSequenceSource(0, "
    "n - 1), WatermarkStrategy.no_watermarks(), name) mapped to your records, a FileSource "
    "(env.from_source(FileSource.for_record_stream_format(...).build(), ...)) or Kafka "
    "(see docs/durability.md)"
)


def _class_name(j_object: Any) -> str:
    return str(j_object.getClass().getSimpleName())


def _replayed_source_name(j_transformation: Any) -> str | None:
    """How to name the transformation if it is a source read again after a restore."""
    if _class_name(j_transformation) != "LegacySourceTransformation":
        return None
    function = j_transformation.getOperator().getUserFunction()
    if _class_name(function) != _LEGACY_INPUT_FORMAT_SOURCE:
        return None
    name = str(j_transformation.getName())
    if _class_name(function.getFormat()) == _COLLECTION_FORMAT:
        return f"env.from_collection ({name!r})"
    return f"a legacy input-format source ({name!r})"


def replayed_sources(j_transformation: Any) -> list[str]:
    """The sources upstream of `j_transformation` (a Java `Transformation`, this one
    included) that read their input again from the start after a restore, named."""
    found: list[str] = []
    seen: set[int] = set()
    pending = [j_transformation]
    while pending:
        current = pending.pop()
        ident = int(current.getId())
        if ident in seen:
            continue
        seen.add(ident)
        name = _replayed_source_name(current)
        if name is not None:
            found.append(name)
        pending.extend(current.getInputs())
    return sorted(found)


def warn_if_replayed(j_stream: Any, agent: str) -> None:
    """Log a warning when checkpointing is on and `j_stream` (a Java `DataStream`, the
    input of agent `agent`) reads from a source that starts again after a restore."""
    j_env = j_stream.getExecutionEnvironment()
    if not j_env.getCheckpointConfig().isCheckpointingEnabled():
        return
    sources = replayed_sources(j_stream.getTransformation())
    if sources:
        _LOG.warning(_REPLAYED.format(agent=agent, sources=", ".join(sources)))
