"""Store operations tried again through a short outage, with capped exponential backoff.

A store raises :class:`DurableStoreUnavailableError` when it could not be read or written
just now (a read-only or full disk, a lock, a database restarting). :meth:`StoreRetry.call`
tries the operation again, waiting ``initial_backoff_s`` and then twice as long each time (at
most ``max_backoff_s``), until it succeeds or ``timeout_s`` have passed since the first
failure; then it raises the last error. Any other error is raised at once. Every store
write is idempotent, so an attempt whose answer was lost is safe to make again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from flink_agents.runtime.errors import DurableStoreUnavailableError

__all__ = ["StoreRetry"]

T = TypeVar("T")

_LOG = logging.getLogger(__name__)


class StoreRetry:
    """How store operations are tried again through an outage (picklable: policy only).

    ``clock`` (seconds, monotonic) and ``sleep`` are for tests. :meth:`stop` makes the
    operations in progress raise their last error instead of trying again (the log is
    closing); with the default ``sleep`` it also ends their waits at once.
    """

    def __init__(
        self,
        timeout_s: float = 60.0,
        *,
        initial_backoff_s: float = 0.05,
        max_backoff_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        if timeout_s < 0 or initial_backoff_s <= 0 or max_backoff_s < initial_backoff_s:
            raise ValueError(
                "StoreRetry needs timeout_s >= 0 and 0 < initial_backoff_s <= max_backoff_s"
            )
        self.timeout_s = timeout_s
        self.initial_backoff_s = initial_backoff_s
        self.max_backoff_s = max_backoff_s
        self.clock = clock
        self.sleep = sleep
        self._stops = 0
        """How many times :meth:`stop` was called."""
        self._stopping = threading.Condition()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_stopping"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._stopping = threading.Condition()

    def __repr__(self) -> str:
        return f"StoreRetry(timeout_s={self.timeout_s})"

    def stop(self) -> None:
        """Make the operations in progress raise their last error instead of trying again
        (their waits end at once). Operations started later are tried again as usual."""
        with self._stopping:
            self._stops += 1
            self._stopping.notify_all()

    def _wait(self, delay_s: float, stops: int) -> None:
        if self.sleep is not None:
            self.sleep(delay_s)
            return
        with self._stopping:
            self._stopping.wait_for(lambda: self._stops != stops, timeout=delay_s)

    def call(self, operation: str, fn: Callable[[], T]) -> T:
        """``fn()``, tried again while it raises :class:`DurableStoreUnavailableError`.

        ``operation`` names it in the log lines (one warning at the first failure, one at
        recovery). Raises the last error once ``timeout_s`` have passed since the first
        failure, or once :meth:`stop` was called.
        """
        stops = self._stops
        first_failure: float | None = None
        attempts = 0
        delay = self.initial_backoff_s
        while True:
            attempts += 1
            try:
                result = fn()
            except DurableStoreUnavailableError as exc:
                now = self.clock()
                if first_failure is None:
                    first_failure = now
                    if self.timeout_s > 0:
                        _LOG.warning(
                            "durable store %s failed; trying again for up to %g s: %s",
                            operation,
                            self.timeout_s,
                            exc,
                        )
                remaining = first_failure + self.timeout_s - now
                if remaining <= 0 or self._stops != stops:
                    if attempts > 1:
                        raise DurableStoreUnavailableError(
                            f"{exc} (still failing after {attempts} attempts over "
                            f"{now - first_failure:.1f} s; durable-execution.store."
                            "retry-timeout-s bounds the wait)"
                        ) from exc
                    raise
                self._wait(min(delay, remaining), stops)
                delay = min(delay * 2, self.max_backoff_s)
                continue
            if first_failure is not None:
                _LOG.warning(
                    "durable store %s succeeded after %d attempts over %.1f s",
                    operation,
                    attempts,
                    self.clock() - first_failure,
                )
            return result
