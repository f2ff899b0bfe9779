"""`AdaptiveConcurrency`: how many calls a connection may have in flight, learnt from the
provider's overloads the way TCP learns a network's window (additive increase,
multiplicative decrease), with no slow start:

- unlimited until the first overload (a burst is not held back before the provider has
  said anything);
- an overload sets the limit to `DECREASE_FACTOR` of the calls in flight that the provider
  did not refuse; the first refusal after a decrease opens a new *epoch* (the decrease is
  made once for all the calls that met the same overload), and each later refusal of a
  call started in an earlier epoch takes one call off what the provider took and lowers
  the limit with it;
- an answer saying the provider's limit is used up (its rate-limit headers: the call was
  taken, the next would not be) decreases the same way, counting that call as taken;
- while the limit is reached, every ``limit`` answers add one (one per round trip).

Pure state, no clock, no lock: `RequestLimiter` (`flink_agents.runtime.request_limiter`)
holds its lock around every call.
"""

from __future__ import annotations

import math

__all__ = ["DECREASE_FACTOR", "MAX_ADAPTIVE_LIMIT", "AdaptiveConcurrency"]

MAX_ADAPTIVE_LIMIT = 10_000
"""The adaptive limit never grows past this."""
DECREASE_FACTOR = 0.7
"""What an overload multiplies the calls in flight (that the provider did not refuse) by,
for the new limit."""


class AdaptiveConcurrency:
    """The adaptive concurrency limit of one connection (unlimited until an overload)."""

    __slots__ = ("_not_refused", "_successes", "epoch", "limit")

    def __init__(self) -> None:
        self.limit = math.inf
        """Calls allowed in flight (``inf`` until the first overload)."""
        self.epoch = 0
        """How many times an overload has opened a decrease; a call remembers the epoch it
        started in."""
        self._successes = 0
        self._not_refused = 0
        """Calls in flight at the last decrease that the provider has not refused (yet)."""

    @property
    def learnt(self) -> bool:
        """Whether an overload has set a limit."""
        return not math.isinf(self.limit)

    def answered_at_limit(self) -> None:
        """An answer came while the limit was reached: +1 once as many have come as the
        limit (one per round trip)."""
        if not self.learnt:
            return
        self._successes += 1
        if self._successes >= int(self.limit):
            self._successes = 0
            self.limit = min(float(MAX_ADAPTIVE_LIMIT), self.limit + 1.0)

    def overloaded(self, started_epoch: int, in_flight: int) -> None:
        """A call started in ``started_epoch`` was refused; ``in_flight`` calls (this one
        included) were in flight."""
        if started_epoch == self.epoch:
            # The first refusal since the last decrease: the other calls in flight are
            # what the provider may have taken.
            self._not_refused = int(min(self.limit, float(in_flight))) - 1
            self._successes = 0
            self.epoch += 1
        else:
            # A call in flight at the last decrease refused too: one fewer taken.
            self._not_refused = max(0, self._not_refused - 1)
        self._decrease()

    def limit_used_up(self, started_epoch: int, in_flight: int) -> None:
        """A call started in ``started_epoch`` was answered, and the answer said the
        provider's limit is used up; ``in_flight`` calls (this one included) were in
        flight. The first such answer since the last decrease opens a new one, with every
        call in flight taken; later ones of calls started before it change nothing (the
        provider took them)."""
        if started_epoch != self.epoch:
            return
        self._not_refused = int(min(self.limit, float(in_flight)))
        self._successes = 0
        self.epoch += 1
        self._decrease()

    def _decrease(self) -> None:
        decreased = float(int(self._not_refused * DECREASE_FACTOR))
        self.limit = max(1.0, min(self.limit, decreased))
