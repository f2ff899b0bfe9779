"""The outputs of the end-of-input drain leave without a timestamp.

Flink stamps what a keyed function emits from an event-time timer with the timer's time.
The agent operator drains at end of input from its event-time timer at `END_OF_INPUT_TIMER`
(close to `Long.MAX_VALUE`, see `keyed_runs`), so the answers it sends then would carry that
time, which no downstream expects: a `KafkaSink` writes it into the record and a broker
refuses a timestamp that far in the future. Flink gives no Python function a way to set an
output's timestamp; in thread mode the operator's Java collector is reached through the
timer context instead (`compat.pyflink.timer_collector`) and its timestamp erased
(`TimestampedCollector.eraseTimestamp`), as Flink does itself for the outputs of
processing-time timers (the poll timers of runs that wait). The drained answers then carry
no timestamp, like the other answers of runs that waited, and a Kafka producer stamps them
with its own clock (`CreateTime`).

In process mode the worker gives each timer output the timer's time and nothing here can
reach it (`python.execution-mode: process` takes no checkpoints, so no exactly-once sink).
"""

from __future__ import annotations

from typing import Any

from flink_agents.runtime.flink.compat.pyflink import timer_collector

__all__ = ["TimerOutputs"]


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
            collector = self._collector = timer_collector(ctx)
            if collector is None:
                return False
        collector.eraseTimestamp()
        return True
