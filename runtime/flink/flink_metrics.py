"""Agent metrics per subtask, published through Flink's metric groups.

Actions record metrics on the run loop's thread; Flink metric objects may only be touched
on the operator thread (in thread mode they are Java objects reached through pemja). So the
agent side writes into an `InMemoryMetricGroup`, and the operator thread calls `flush` from
its callbacks to push the changes into Flink:

- counters -> Flink counters (incremented by the change since the last flush);
- numeric gauges -> Flink "distribution" gauges holding the last value (integers);
- histograms -> a Flink counter `<name>Count` and gauges `<name>Mean`, `<name>Min`,
  `<name>Max` (integers, the unit is in the name, e.g. milliseconds).
"""

from __future__ import annotations

from typing import Any, Protocol

from flink_agents.runtime.metrics import InMemoryMetricGroup

__all__ = ["FlinkMetricGroupLike", "FlinkMetricsBridge"]


class _FlinkCounter(Protocol):
    def inc(self, n: int = 1) -> None: ...


class _FlinkDistribution(Protocol):
    def update(self, value: int) -> None: ...


class FlinkMetricGroupLike(Protocol):
    """The part of `pyflink.metrics.MetricGroup` used here."""

    def add_group(self, name: str, extra: str | None = None) -> Any: ...

    def counter(self, name: str) -> Any: ...

    def distribution(self, name: str) -> Any: ...


class FlinkMetricsBridge:
    """Copies an in-memory metric tree into a Flink metric group, on the operator thread."""

    def __init__(
        self,
        source: InMemoryMetricGroup,
        target: FlinkMetricGroupLike,
    ) -> None:
        self._source = source
        self._target = target
        self._groups: dict[tuple[str, ...], Any] = {(): target}
        self._counters: dict[tuple[str, ...], _FlinkCounter] = {}
        self._distributions: dict[tuple[str, ...], _FlinkDistribution] = {}
        self._sent_counts: dict[tuple[str, ...], int] = {}
        self._sent_values: dict[tuple[str, ...], int] = {}

    def flush(self) -> None:
        """Push every change since the last flush to Flink."""
        try:
            self._flush_group((), self._source)
        except RuntimeError:  # the run loop added a metric mid-copy: the next flush gets it
            return

    def _flush_group(self, path: tuple[str, ...], group: InMemoryMetricGroup) -> None:
        # The in-memory group keeps counters, gauges and histograms apart; its snapshot
        # does not (an int gauge looks like a counter there), so read them by kind.
        for name, counter in list(getattr(group, "_counters", {}).items()):
            self._add_count((*path, name), counter.get_count())
        for name, gauge in list(getattr(group, "_gauges", {}).items()):
            value = gauge.get_value()
            if isinstance(value, (int, float)):  # bool is an int
                self._set_value((*path, name), round(value))
            # other gauge values (strings, None) have no Flink form: skipped
        for name, histogram in list(getattr(group, "_histograms", {}).items()):
            self._add_count((*path, f"{name}Count"), histogram.get_count())
            for stat, value in (
                ("Mean", histogram.get_mean()),
                ("Min", histogram.get_min()),
                ("Max", histogram.get_max()),
            ):
                self._set_value((*path, f"{name}{stat}"), round(value))
        for name, sub_group in list(getattr(group, "_groups", {}).items()):
            self._flush_group((*path, name), sub_group)

    def _group(self, path: tuple[str, ...]) -> Any:
        group = self._groups.get(path)
        if group is None:
            group = self._group(path[:-1]).add_group(path[-1])
            self._groups[path] = group
        return group

    def _add_count(self, path: tuple[str, ...], total: int) -> None:
        delta = total - self._sent_counts.get(path, 0)
        if delta == 0:
            return
        counter = self._counters.get(path)
        if counter is None:
            counter = self._group(path[:-1]).counter(path[-1])
            self._counters[path] = counter
        counter.inc(delta)
        self._sent_counts[path] = total

    def _set_value(self, path: tuple[str, ...], value: int) -> None:
        if self._sent_values.get(path) == value:
            return
        gauge = self._distributions.get(path)
        if gauge is None:
            gauge = self._group(path[:-1]).distribution(path[-1])
            self._distributions[path] = gauge
        gauge.update(value)
        self._sent_values[path] = value
