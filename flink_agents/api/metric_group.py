"""The metric-group interface actions record metrics through (upstream's module).

``ctx.agent_metric_group`` and ``ctx.action_metric_group`` are `MetricGroup`s. The
interface follows Flink's shape (groups and key/value groups, counters, meters, gauges,
histograms); the runtime implements it: in memory on the local runner
(``InMemoryMetricGroup``), published through Flink's metric groups by the agent operator.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = [
    "DEFAULT_HISTOGRAM_WINDOW",
    "METER_SPAN_S",
    "Counter",
    "Gauge",
    "Histogram",
    "Meter",
    "MetricGroup",
    "check_group_name",
]

DEFAULT_HISTOGRAM_WINDOW = 100
"""How many of the latest values a histogram's statistics cover, unless told (upstream's
and Flink's ``DescriptiveStatisticsHistogram`` default)."""

METER_SPAN_S = 60
"""The seconds a meter's rate is averaged over (Flink's ``MeterView`` default)."""


class Counter(ABC):
    """A count that only goes up (or down, explicitly)."""

    @abstractmethod
    def inc(self, n: int = 1) -> None:
        """Add ``n``."""

    @abstractmethod
    def dec(self, n: int = 1) -> None:
        """Subtract ``n``."""

    @abstractmethod
    def get_count(self) -> int:
        """The current count."""


class Meter(ABC):
    """A throughput: events marked, and their rate per second."""

    @abstractmethod
    def mark(self, n: int = 1) -> None:
        """Mark ``n`` events."""

    @abstractmethod
    def get_rate(self) -> float:
        """Events per second, averaged over the last `METER_SPAN_S` seconds."""

    @abstractmethod
    def get_count(self) -> int:
        """How many events were marked in all."""


class Histogram(ABC):
    """A distribution of values (latencies, sizes): its statistics cover the latest
    ``window_size`` values (`MetricGroup.get_histogram`)."""

    @abstractmethod
    def update(self, value: float) -> None:
        """Record one value."""

    @abstractmethod
    def get_count(self) -> int:
        """How many values were recorded in all."""

    @abstractmethod
    def get_mean(self) -> float:
        """Mean of the values in the window (0 when none)."""

    @abstractmethod
    def get_min(self) -> float:
        """Smallest value in the window (0 when none)."""

    @abstractmethod
    def get_max(self) -> float:
        """Largest value in the window (0 when none)."""


class Gauge(ABC):
    """A value that is set, not accumulated."""

    @abstractmethod
    def update(self, value: Any) -> None:
        """Set the value."""

    @abstractmethod
    def get_value(self) -> Any:
        """The current value."""


class MetricGroup(ABC):
    """A named group of metrics, with sub-groups. Each getter creates its metric on first
    use and returns the same one for the same name after."""

    @abstractmethod
    def get_sub_group(self, name: str, value: str | None = None) -> MetricGroup:
        """The sub-group ``name``; with a ``value``, the key/value sub-group (``name`` is
        the key: on Flink a user variable ``<name>`` = ``value`` of the metrics below it).
        A plain name must not contain ``=`` (`ValueError`: use the key/value form)."""

    @abstractmethod
    def get_counter(self, name: str) -> Counter:
        """The counter ``name``."""

    @abstractmethod
    def get_meter(self, name: str) -> Meter:
        """The meter ``name``."""

    @abstractmethod
    def get_histogram(self, name: str, window_size: int = DEFAULT_HISTOGRAM_WINDOW) -> Histogram:
        """The histogram ``name``, whose statistics cover its latest ``window_size`` values
        (given when it is created; later calls get the same histogram)."""

    @abstractmethod
    def get_gauge(self, name: str) -> Gauge:
        """The gauge ``name``."""


def check_group_name(name: str) -> None:
    """`ValueError` for a plain sub-group name with ``=`` (upstream's rule: that is how a
    key/value group is told apart)."""
    if "=" in name:
        raise ValueError(
            f"a sub-group name must not contain '=' (got {name!r}); use "
            "get_sub_group(key, value) for a key/value group"
        )
