"""The metric-group interface actions record metrics through.

``ctx.agent_metric_group`` and ``ctx.action_metric_group`` are `MetricGroup`s. The
interface follows Flink's shape (groups, counters, gauges, histograms); the runtime
implements it: in memory on the local runner (``InMemoryMetricGroup``), published
through Flink's metric groups by the agent operator.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = ["Counter", "Gauge", "Histogram", "MetricGroup"]


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


class Histogram(ABC):
    """A distribution of values (latencies, sizes)."""

    @abstractmethod
    def update(self, value: float) -> None:
        """Record one value."""

    @abstractmethod
    def get_count(self) -> int:
        """How many values were recorded."""

    @abstractmethod
    def get_mean(self) -> float:
        """Mean of the recorded values (0 when none)."""

    @abstractmethod
    def get_min(self) -> float:
        """Smallest recorded value (0 when none)."""

    @abstractmethod
    def get_max(self) -> float:
        """Largest recorded value (0 when none)."""


class Gauge(ABC):
    """A value that is set, not accumulated."""

    @abstractmethod
    def update(self, value: Any) -> None:
        """Set the value."""

    @abstractmethod
    def get_value(self) -> Any:
        """The current value."""


class MetricGroup(ABC):
    """A named group of metrics, with sub-groups."""

    @abstractmethod
    def get_sub_group(self, name: str) -> MetricGroup:
        """The sub-group of that name (created on first use)."""

    @abstractmethod
    def get_counter(self, name: str) -> Counter:
        """The counter of that name (created on first use)."""

    @abstractmethod
    def get_histogram(self, name: str) -> Histogram:
        """The histogram of that name (created on first use)."""

    @abstractmethod
    def get_gauge(self, name: str) -> Gauge:
        """The gauge of that name (created on first use)."""
