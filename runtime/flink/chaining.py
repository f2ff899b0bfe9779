"""PyFlink's fusion of Python operators, made safe for `execute_and_collect`.

PyFlink fuses a Python operator with the Python operator after it into one (no pickling,
no hand-over between them): the agent operator and the `map` after it run as one function
chain. The fused operator keeps the first one's uid, so the agent's state maps onto it.

`DataStream.execute_and_collect` fuses only what its stream reaches, and finds who consumes
a fused operator among the operators the environment lists, which holds physical operators
only: a union, a repartition or a side output between the fused pair and the collected
stream is not there. Such a consumer keeps reading the operators that were fused, and the
job runs them twice: once fused, once as they were. With a uid on the first of them the job
graph has that uid twice and Flink refuses it (`Hash collision on user-specified ID`);
without one, every input goes through both copies.

`install_collect_fix` makes `execute_and_collect` list the collected stream first, so the
fusion finds every consumer on its way there. `env.execute()` needs no fix: it fuses over
every operator, and reaches unions and the like through the sinks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyflink.datastream import DataStream  # pyright: ignore[reportMissingImports]

__all__ = ["install_collect_fix"]

_FIXED = "_flink_agents_collect_fix"


def install_collect_fix() -> None:
    """Make `DataStream.execute_and_collect` fuse Python operators without leaving the
    fused ones in the job (see the module doc). Idempotent."""
    current: Callable[[Any], None] = DataStream._apply_chaining_optimization
    if getattr(current, _FIXED, False):
        return

    def _apply_chaining_optimization(self: Any) -> None:
        j_stream = self._j_data_stream
        j_env = j_stream.getExecutionEnvironment()
        j_transformation = j_stream.getTransformation()
        if not j_env.getTransformations().contains(j_transformation):
            j_env.addOperator(j_transformation)
        current(self)

    setattr(_apply_chaining_optimization, _FIXED, True)
    DataStream._apply_chaining_optimization = _apply_chaining_optimization
