"""The outputs of the end-of-input drain leave without a timestamp.

Flink stamps what a keyed function emits from an event-time timer with the timer's time.
The agent operator drains at end of input from its event-time timer at `END_OF_INPUT_TIMER`
(close to `Long.MAX_VALUE`, see `keyed_runs`), so the answers it sends then would carry that
time, which no downstream expects: a `KafkaSink` writes it into the record and a broker
refuses a timestamp that far in the future. Flink gives no Python function a way to set an
output's timestamp; in thread mode the operator's Java collector is reached through the
timer context instead and its timestamp erased (`TimestampedCollector.eraseTimestamp`), as
Flink does itself for the outputs of processing-time timers (the poll timers of runs that
wait). The drained answers then carry no timestamp, like the other answers of runs that
waited, and a Kafka producer stamps them with its own clock (`CreateTime`).

In process mode the worker gives each timer output the timer's time and nothing here can
reach it (`python.execution-mode: process` takes no checkpoints, so no exactly-once sink).
"""

from __future__ import annotations

from typing import Any

__all__ = ["TimerOutputs"]

_OUTER_FIELD = "this$0"
"""The timer context's reference to its operator (a Java inner class's enclosing instance)."""
_COLLECTOR_FIELD = "collector"
"""`AbstractEmbeddedDataStreamPythonFunctionOperator.collector`, the `TimestampedCollector`
every output of the operator's callbacks goes through."""


def _field_value(j_object: Any, name: str) -> Any:
    """The value of field `name` of a Java object, declared on its class or a superclass."""
    j_class = j_object.getClass()
    while j_class is not None:
        for field in j_class.getDeclaredFields():
            if field.getName() == name:
                field.setAccessible(True)
                return field.get(j_object)
        j_class = j_class.getSuperclass()
    raise LookupError(f"no field {name!r} on {j_object.getClass().getName()}")


class TimerOutputs:
    """Erases the timestamp Flink gives the outputs of a timer callback (thread mode).

    One per operator instance: the collector is looked up once, on the first call."""

    __slots__ = ("_collector",)

    def __init__(self) -> None:
        self._collector: Any = None

    def erase_timestamp(self, ctx: Any) -> bool:
        """From now until the callback of `ctx` returns, its outputs carry no timestamp.
        False in process mode (no Java collector to reach from here)."""
        collector = self._collector
        if collector is None:
            j_context = getattr(ctx, "_j_timer_context", None)
            if j_context is None:
                return False
            collector = self._collector = _field_value(
                _field_value(j_context, _OUTER_FIELD), _COLLECTOR_FIELD
            )
        collector.eraseTimestamp()
        return True
