"""A bounded source that ends long before the agent's work: outputs still leave as they are
made (issue 29, item 12), and the drain writes each key's keyed state as that key.

The source is read in a moment; 30 keys then ask a paced model three times each, the last
key's answers coming over 5 s. Upstream's multi-agent example has this shape (a file read
in 5 s, then minutes of model calls, processing-time windows after the agent): the
operator's end-of-input callback used to wait for one key while no other key's outputs
left, so they came in one burst at the end and the downstream window dropped them with
its last open window. The answers the drain sends carry no timestamp, not the end-of-input
timer's (a Kafka broker refuses that one: issue 34).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from e2e_tests.agents import PacedModelAgent

pytestmark = pytest.mark.flink

KEYS, INPUTS = 30, 3
WINDOW_MS = 1000


def _stamp(output: dict[str, Any]) -> dict[str, Any]:
    import time

    return {**output, "emitted_at": time.time()}


def _timestamp_function() -> Any:
    from pyflink.datastream import KeyedProcessFunction

    class TimestampOf(KeyedProcessFunction):
        """The Flink timestamp each output arrived with (Long.MIN_VALUE: none)."""

        def process_element(self, value: Any, ctx: Any) -> Any:
            yield {"timestamp": ctx.timestamp()}

    return TimestampOf()


def _window_function() -> Any:
    from pyflink.datastream.functions import ProcessWindowFunction

    class Made(ProcessWindowFunction):
        """Per window: when the outputs in it were made."""

        def process(self, key: Any, context: Any, elements: Any) -> Any:
            yield {"window_end": context.window().end, "made": [e["done_at"] for e in elements]}

    return Made()


@pytest.fixture(scope="module")
def job(stream_env: Callable[..., Any]) -> dict[str, Any]:
    from pyflink.common.time import Time
    from pyflink.common.typeinfo import Types
    from pyflink.datastream.window import TumblingProcessingTimeWindows

    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(parallelism=2)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    assert agents_env.execution_mode == "thread"
    source = env.from_collection(
        [{"key": f"k{k}", "n": n} for n in range(INPUTS) for k in range(KEYS)]
    )
    paced = agents_env.from_datastream(source, key_selector=lambda r: r["key"])
    paced.apply(PacedModelAgent(), name="paced")
    stamped = paced.to_datastream().map(_stamp)
    windows = (
        stamped.key_by(lambda _: 0, key_type=Types.INT())
        .window(TumblingProcessingTimeWindows.of(Time.milliseconds(WINDOW_MS)))
        .process(_window_function())
    )
    # Keyed, so not fused into the agent operator: it sees the timestamps Flink sent.
    timestamps = stamped.key_by(lambda _: 0, key_type=Types.INT()).process(_timestamp_function())
    started = time.time()
    with stamped.union(windows, timestamps).execute_and_collect("e2e-drain") as results:
        collected = list(results)
    return {
        "started": started,
        "outputs": [o for o in collected if "answer" in o],
        "windows": [o for o in collected if "window_end" in o],
        "timestamps": [o["timestamp"] for o in collected if "timestamp" in o],
    }


def test_every_output_arrives_in_key_order(job: dict[str, Any]) -> None:
    per_key: dict[str, list[str]] = defaultdict(list)
    for output in job["outputs"]:
        per_key[output["key"]].append(output["answer"])
    assert per_key == {f"k{k}": [f"echo k{k}/{n}" for n in range(INPUTS)] for k in range(KEYS)}


def test_outputs_leave_as_they_are_made_after_the_source_ended(job: dict[str, Any]) -> None:
    outputs = job["outputs"]
    # The runs go on for seconds after the source was read (the model's first answer
    # takes 0.2 s): the slowest key answers three times over about 5 s.
    made = sorted(o["done_at"] for o in outputs)
    assert made[-1] - made[0] > 3 * PacedModelAgent.latency_s(KEYS - 1) - 1.0
    # Each output went downstream when it was made, not when its key (or the key whose
    # end-of-input callback came first) had nothing left to do.
    lags = sorted(o["emitted_at"] - o["done_at"] for o in outputs)
    assert lags[-1] < 1.0, lags[-5:]


def test_drained_outputs_carry_no_end_of_input_timestamp(job: dict[str, Any]) -> None:
    # The source ended long before the runs: their answers leave from the end-of-input
    # timer (`timer_outputs`), and no answer may carry that timer's time.
    stamps = job["timestamps"]
    assert len(stamps) == KEYS * INPUTS
    an_hour_ahead = (time.time() + 3600) * 1000
    assert [t for t in stamps if t > an_hour_ahead] == []


def test_a_downstream_window_sees_them_spread_over_its_windows(job: dict[str, Any]) -> None:
    # Windows close on processing time while the agent's runs go on (the last open one
    # is dropped when the job ends, as Flink does).
    closed = [w for w in job["windows"] if w["made"]]
    assert len(closed) >= 2, closed
    seen = sum(len(w["made"]) for w in closed)
    assert seen >= KEYS * INPUTS // 2, (seen, [len(w["made"]) for w in closed])


class _WritesForAnotherKey:
    """A keyed function that, for an input ``(key, "write", other)``, makes `other` the
    current key as the operator's end-of-input drain does (`operator._CurrentKey`),
    writes a value and registers the end-of-input timer there, and makes its own key
    current again; every input and timer reports the current key's value."""

    @staticmethod
    def make() -> Any:
        from pyflink.common.typeinfo import Types
        from pyflink.datastream import KeyedProcessFunction
        from pyflink.datastream.state import ValueStateDescriptor

        from flink_agents.runtime.flink.keyed_runs import END_OF_INPUT_TIMER
        from flink_agents.runtime.flink.operator import _CurrentKey

        class WritesForAnotherKey(KeyedProcessFunction):
            def open(self, runtime_context: Any) -> None:
                self.value = runtime_context.get_state(ValueStateDescriptor("v", Types.STRING()))
                self.current = _CurrentKey(runtime_context)

            def process_element(self, value: Any, ctx: Any) -> Any:
                key, action, other = value
                if action == "write":
                    self.current.set(other)
                    self.value.update(f"written by {key}")
                    ctx.timer_service().register_event_time_timer(END_OF_INPUT_TIMER)
                    self.current.set(key)
                yield f"{ctx.get_current_key()} {action}: {self.value.value()}"

            def on_timer(self, timestamp: int, ctx: Any) -> Any:
                yield f"{ctx.get_current_key()} timer: {self.value.value()}"

        return WritesForAnotherKey()


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_another_key_made_current_has_its_own_state_and_timers(
    stream_env: Callable[..., Any], mode: str
) -> None:
    from pyflink.common.typeinfo import Types

    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(parallelism=1)
    assert FlinkAgentsExecutionEnvironment(env, execution_mode=mode).execution_mode == mode
    inputs = [("a", "write", "b"), ("b", "read", ""), ("a", "read", ""), ("c", "read", "")]
    source = env.from_collection(
        inputs, type_info=Types.TUPLE([Types.STRING(), Types.STRING(), Types.STRING()])
    )
    keyed = source.key_by(lambda r: r[0], key_type=Types.STRING())
    out = keyed.process(_WritesForAnotherKey.make(), output_type=Types.STRING())
    with out.execute_and_collect(f"e2e-key-switch-{mode}") as results:
        collected = list(results)
    assert collected == [
        "a write: None",  # the write went to b, and a is current again
        "b read: written by a",
        "a read: None",
        "c read: None",
        "b timer: written by a",  # the timer was b's
    ]
