"""Metrics: the in-memory `MetricGroup` and the chat/tool recorders the built-in actions
use.

The interface is the API's (`flink_agents.api.metric_group`). The local runner uses
`InMemoryMetricGroup`, whose `snapshot` tests and benchmarks read; the PyFlink operator
records into one too and publishes it through Flink's metric groups
(`flink_agents.runtime.flink.flink_metrics`).
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from flink_agents.api.chat_result import ChatResult
from flink_agents.api.metric_group import (
    DEFAULT_HISTOGRAM_WINDOW,
    METER_SPAN_S,
    Counter,
    Gauge,
    Histogram,
    Meter,
    MetricGroup,
    check_group_name,
)
from flink_agents.runtime.request_gate import LimitReport

__all__ = [
    "USAGE_COUNTERS",
    "InMemoryMetricGroup",
    "record_chat_call",
    "record_chat_error",
    "record_chat_retry",
    "record_request_limits",
    "record_tool_call",
    "record_tool_thread_written_off",
]

_M = TypeVar("_M")


# ------------------------------------------------------------------ in memory


class _Locked:
    """Pickles without its lock (a new one where it is unpickled): an engine and its
    metric group travel to Flink workers with cloudpickle, used or not."""

    __slots__ = ()

    def __getstate__(self) -> dict[str, Any]:
        self._fold()
        slots: tuple[str, ...] = type(self).__slots__  # type: ignore[attr-defined]
        return {name: getattr(self, name) for name in slots if name != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._lock = threading.Lock()

    def _fold(self) -> None:
        """Bring in what waits to be counted (`_Counter`, `_Histogram`)."""


_FOLD_AT = 256
"""Additions (or histogram values) that wait on their deque at most before they are folded
in (`_Counter`, `_Histogram`)."""


_NEVER = object()
"""The end marker `_take` gives `iter`: no value on a deque is it."""


def _take(waiting: deque[Any], count: int) -> Iterator[Any]:
    """The first ``count`` values on ``waiting``, taken off it (others may append
    meanwhile): only under its owner's lock, the one place values leave it."""
    return itertools.islice(iter(waiting.popleft, _NEVER), count)


class _Counter(_Locked, Counter):
    """Its additions go on a deque, whose appends are atomic: `inc` takes no lock (it runs
    several times per step). They are folded into the count when it is read, and whenever
    `_FOLD_AT` wait."""

    __slots__ = ("_adds", "_count", "_lock")

    def __init__(self) -> None:
        self._count = 0
        self._adds: deque[int] = deque()
        self._lock = threading.Lock()

    def inc(self, n: int = 1) -> None:
        adds = self._adds
        adds.append(n + 0)  # what is no number fails here, in its caller, not in a read
        if len(adds) >= _FOLD_AT:
            self._fold()

    def dec(self, n: int = 1) -> None:
        self.inc(-n)

    def get_count(self) -> int:
        self._fold()
        return self._count

    def _fold(self) -> None:
        with self._lock:
            adds = self._adds
            self._count += sum(_take(adds, len(adds)))


class _Meter(_Locked, Meter):
    """Events counted per second of ``clock``; the rate is those of the last
    `METER_SPAN_S` seconds over that span (as Flink's ``MeterView``)."""

    __slots__ = ("_clock", "_count", "_lock", "_seconds")

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._count = 0
        self._seconds: deque[list[int]] = deque()
        """``[second, events]``, oldest first; none older than the span."""
        self._lock = threading.Lock()

    def mark(self, n: int = 1) -> None:
        second = int(self._clock())
        with self._lock:
            self._count += n
            seconds = self._seconds
            if seconds and seconds[-1][0] == second:
                seconds[-1][1] += n
            else:
                seconds.append([second, n])
                self._forget_before(second)

    def get_rate(self) -> float:
        second = int(self._clock())
        with self._lock:
            self._forget_before(second)
            return sum(events for _, events in self._seconds) / METER_SPAN_S

    def get_count(self) -> int:
        return self._count

    def _forget_before(self, second: int) -> None:
        seconds = self._seconds
        while seconds and seconds[0][0] <= second - METER_SPAN_S:
            seconds.popleft()

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        # Another process's clock: the rate starts afresh there, the count goes on.
        self._seconds = deque()


class _Histogram(_Locked, Histogram):
    """The latest ``window_size`` values, and how many there were in all. As a counter's
    additions, new values wait on a deque (no lock in `update`) until read or `_FOLD_AT`
    wait."""

    __slots__ = ("_count", "_lock", "_new", "_values")

    def __init__(self, window_size: int) -> None:
        if window_size < 1:
            raise ValueError(f"a histogram's window_size must be at least 1, not {window_size}")
        self._count = 0
        self._values: deque[float] = deque(maxlen=window_size)
        self._new: deque[float] = deque()
        self._lock = threading.Lock()

    def update(self, value: float) -> None:
        new = self._new
        new.append(value)
        if len(new) >= _FOLD_AT:
            self._fold()

    def _fold(self) -> None:
        with self._lock:
            self._fold_locked()

    def _fold_locked(self) -> None:
        new = self._new
        count = len(new)
        self._count += count
        self._values.extend(_take(new, count))

    def _window(self) -> tuple[float, ...]:
        with self._lock:
            self._fold_locked()
            return tuple(self._values)

    def get_count(self) -> int:
        self._fold()
        return self._count

    def get_mean(self) -> float:
        values = self._window()
        return sum(values) / len(values) if values else 0.0

    def get_min(self) -> float:
        return min(self._window(), default=0.0)

    def get_max(self) -> float:
        return max(self._window(), default=0.0)


class _Gauge(Gauge):
    __slots__ = ("_value",)

    def __init__(self) -> None:
        self._value: Any = None

    def update(self, value: Any) -> None:
        self._value = value

    def get_value(self) -> Any:
        return self._value


class InMemoryMetricGroup(MetricGroup):
    """Metrics kept in this process; `snapshot` returns them as nested dicts. ``clock``
    (seconds) times the meters' rates."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._groups: dict[str, InMemoryMetricGroup] = {}
        self._kv_groups: dict[tuple[str, str], InMemoryMetricGroup] = {}
        self._counters: dict[str, _Counter] = {}
        self._meters: dict[str, _Meter] = {}
        self._histograms: dict[str, _Histogram] = {}
        self._gauges: dict[str, _Gauge] = {}
        self._lock = threading.Lock()

    def get_sub_group(self, name: str, value: str | None = None) -> InMemoryMetricGroup:
        if value is not None:
            key = (name, value)
            group = self._kv_groups.get(key)
            if group is None:
                with self._lock:
                    group = self._kv_groups.setdefault(key, InMemoryMetricGroup(self._clock))
            return group
        group = self._groups.get(name)
        if group is None:
            check_group_name(name)
            with self._lock:
                group = self._groups.setdefault(name, InMemoryMetricGroup(self._clock))
        return group

    def _get_or_make(self, made: dict[str, _M], name: str, make: Callable[[], _M]) -> _M:
        metric = made.get(name)
        if metric is None:
            with self._lock:
                metric = made.setdefault(name, make())
        return metric

    def get_counter(self, name: str) -> Counter:
        return self._get_or_make(self._counters, name, _Counter)

    def get_meter(self, name: str) -> Meter:
        return self._get_or_make(self._meters, name, lambda: _Meter(self._clock))

    def get_histogram(self, name: str, window_size: int = DEFAULT_HISTOGRAM_WINDOW) -> Histogram:
        return self._get_or_make(self._histograms, name, lambda: _Histogram(window_size))

    def get_gauge(self, name: str) -> Gauge:
        return self._get_or_make(self._gauges, name, _Gauge)

    def snapshot(self) -> dict[str, Any]:
        """Counters as ints, meters as ``{count, rate}``, histograms as ``{count, mean,
        min, max}``, gauges as values, sub-groups as nested dicts (a key/value group
        under ``"key=value"``)."""
        out: dict[str, Any] = {name: c.get_count() for name, c in self._counters.items()}
        for name, m in self._meters.items():
            out[name] = {"count": m.get_count(), "rate": m.get_rate()}
        for name, h in self._histograms.items():
            out[name] = {
                "count": h.get_count(),
                "mean": h.get_mean(),
                "min": h.get_min(),
                "max": h.get_max(),
            }
        for name, g in self._gauges.items():
            out[name] = g.get_value()
        for name, group in self._groups.items():
            out[name] = group.snapshot()
        for (key, value), group in self._kv_groups.items():
            out[f"{key}={value}"] = group.snapshot()
        return out

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._lock = threading.Lock()


# ------------------------------------------------------------------ recorders

USAGE_COUNTERS: dict[str, str] = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_read_tokens": "cacheReadTokens",
    "cache_write_tokens": "cacheWriteTokens",
    "reasoning_tokens": "reasoningTokens",
}
"""`Usage` field -> counter name. A count the provider did not report is not added
(unknown is not zero); ``<counter>Unknown`` counts the calls where it was unknown."""


def _plain(name: str) -> str:
    """``name`` as a plain sub-group name: a ``=`` (which would make it look like a
    key/value group, `check_group_name`) becomes ``_``. Model, connection and tool names
    come from configuration or from a model's answer: recording one never fails a call."""
    return name.replace("=", "_") if "=" in name else name


class _Handles:
    """The metric handles of one sub-group, each looked up once."""

    __slots__ = ("_gauges", "_histograms", "counters", "target")

    def __init__(self, target: MetricGroup) -> None:
        self.target = target
        self.counters: dict[str, Counter] = {}
        """The counters created so far, by name (the hot paths look here first)."""
        self._histograms: dict[str, Histogram] = {}
        self._gauges: dict[str, Gauge] = {}

    def counter(self, name: str) -> Counter:
        # Created on first use: a count never reported never shows up as a zero.
        counter = self.counters.get(name)
        if counter is None:
            counter = self.counters[name] = self.target.get_counter(name)
        return counter

    def histogram(self, name: str) -> Histogram:
        histogram = self._histograms.get(name)
        if histogram is None:
            histogram = self._histograms[name] = self.target.get_histogram(name)
        return histogram

    def gauge(self, name: str) -> Gauge:
        gauge = self._gauges.get(name)
        if gauge is None:
            gauge = self._gauges[name] = self.target.get_gauge(name)
        return gauge


_HANDLES: weakref.WeakKeyDictionary[MetricGroup, dict[tuple[str, str], _Handles]] = (
    weakref.WeakKeyDictionary()
)
"""Per group (while it lives), the handles of its sub-groups by (section, name)."""


def _handles(group: MetricGroup, section: str, name: str) -> _Handles:
    """The handles of ``group.<section>.<name>`` (recorded on every model and tool call:
    the sub-groups are looked up once per group)."""
    by_name = _HANDLES.get(group)
    if by_name is None:
        by_name = _HANDLES[group] = {}
    handles = by_name.get((section, name))
    if handles is None:
        target = group.get_sub_group(section).get_sub_group(_plain(name))
        handles = by_name[(section, name)] = _Handles(target)
    return handles


def record_chat_call(
    group: MetricGroup, model: str, result: ChatResult, latency_s: float | None
) -> None:
    """Count one successful model call: tokens by kind, the call, its latency."""
    handles = _handles(group, "chatModel", model)
    handles.counter("calls").inc()
    latency = handles.histogram("callLatencyMs")  # there (empty) when no call measured one
    if latency_s is not None:
        latency.update(latency_s * 1000.0)
    counters = handles.counters  # looked up here first: this runs for every model call
    values = result.usage.__dict__
    for field, name, unknown in _USAGE_COUNTER_NAMES:
        value = values[field]
        counted = unknown if value is None else name  # unknown is not zero: counted apart
        counter = counters.get(counted)
        if counter is None:
            counter = handles.counter(counted)
        counter.inc(1 if value is None else value)


_UNKNOWN_COUNTERS = {field: f"{name}Unknown" for field, name in USAGE_COUNTERS.items()}


_USAGE_COUNTER_NAMES = tuple(
    (field, name, _UNKNOWN_COUNTERS[field]) for field, name in USAGE_COUNTERS.items()
)


def record_chat_error(group: MetricGroup, model: str, kind: str) -> None:
    """Count one failed model call, by error kind."""
    handles = _handles(group, "chatModel", model)
    handles.counter("errors").inc()
    handles.target.get_sub_group("errorsByKind").get_counter(kind).inc()


def record_chat_retry(group: MetricGroup, model: str, wait_s: float) -> None:
    """Count one retry and the time waited before it."""
    handles = _handles(group, "chatModel", model)
    handles.counter("retries").inc()
    handles.histogram("retryWaitMs").update(wait_s * 1000.0)


def record_request_limits(group: MetricGroup, connection: str, report: LimitReport) -> None:
    """What a connection's limiter did to one model call, under
    ``chatModelConnection.<connection>``: ``concurrencyLimit`` (the limit now; no value
    while unlimited), ``limiterWaits`` and ``limiterWaitMs`` (calls that waited for their
    turn, and how long), ``overloads`` (429, 529 and ``overloaded`` answers),
    ``usedUpLimits`` (answers whose rate-limit headers said a limit was used up)."""
    limiter = report.limiter
    if limiter is None:
        return
    handles = _handles(group, "chatModelConnection", connection)
    handles.gauge("concurrencyLimit").update(limiter.limit)
    if report.waits:
        handles.counter("limiterWaits").inc(report.waits)
        handles.histogram("limiterWaitMs").update(report.wait_s * 1000.0)
    if report.overloads:
        handles.counter("overloads").inc(report.overloads)
    if report.used_up:
        handles.counter("usedUpLimits").inc(report.used_up)


def record_tool_call(group: MetricGroup, tool: str, success: bool, duration_s: float) -> None:
    """Count one tool call, its failures and its duration."""
    handles = _handles(group, "tool", tool)
    handles.counter("calls").inc()
    if not success:
        handles.counter("errors").inc()
    handles.histogram("durationMs").update(duration_s * 1000.0)


def record_tool_thread_written_off(group: MetricGroup, tool: str) -> None:
    """Count one sync call of ``tool`` that timed out and whose thread, still running it,
    was written off (``threadsWrittenOff``: a tool that hangs)."""
    _handles(group, "tool", tool).counter("threadsWrittenOff").inc()
