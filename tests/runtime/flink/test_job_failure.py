"""A failed Flink job's first line names the Python exception that failed it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import py4j.java_gateway as java_gateway
import pytest
from py4j.protocol import Py4JJavaError

from flink_agents.runtime.errors import FlinkJobFailedError
from flink_agents.runtime.flink.job_failure import (
    install_job_failure_hook,
    job_failure,
    python_cause,
)

_RUN_FAILURE = (
    "an agent run failed: ValueError: ticket T-1 has no text "
    "(action 'ask' on a _input_event event, key 'u1', seq 0)"
)

_JOB = [
    ("java.lang.RuntimeException", "Failed to fetch next result"),
    ("org.apache.flink.runtime.client.JobExecutionException", "Job execution failed."),
    ("org.apache.flink.runtime.JobException", "Recovery is suppressed by NoRestartBackoff"),
]

THREAD_MODE = [
    *_JOB,
    ("java.lang.reflect.InvocationTargetException", ""),
    (
        "pemja.core.PythonException",
        f"<class 'flink_agents.runtime.errors.AgentRunFailedError'>: {_RUN_FAILURE}",
    ),
]

_TRACEBACK = f"""Traceback (most recent call last):
  File "/job.py", line 13, in ask
    raise ValueError("ticket T-1 has no text")
ValueError: ticket T-1 has no text

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/runtime/flink/keyed_runs.py", line 182, in raise_if_failed
    raise error
flink_agents.runtime.errors.AgentRunFailedError: {_RUN_FAILURE}
"""

PROCESS_MODE = [
    *_JOB,
    ("java.lang.RuntimeException", "Failed to close remote bundle"),
    (
        "java.lang.RuntimeException",
        f"Error received from SDK harness for instruction 3: {_TRACEBACK}",
    ),
]

PICKLING = [
    *_JOB,
    (
        "pemja.core.PythonException",
        "<class '_pickle.PicklingError'>: Can't pickle <class '__main__.Weather'>: "
        "attribute lookup Weather on __main__ failed",
    ),
]

_EXPECTED_RUN = (
    "ValueError: ticket T-1 has no text (action 'ask' on a _input_event event, key 'u1', seq 0)"
)


@pytest.mark.parametrize("chain", [THREAD_MODE, PROCESS_MODE], ids=["thread", "process"])
def test_an_agent_runs_failure_is_its_cause(chain: list[tuple[str, str]]) -> None:
    assert python_cause(chain) == (_EXPECTED_RUN, True)


def test_another_python_exception_is_named_by_its_type() -> None:
    assert python_cause(PICKLING) == (
        "PicklingError: Can't pickle <class '__main__.Weather'>: attribute lookup Weather "
        "on __main__ failed",
        False,
    )
    traceback = "Traceback (most recent call last):\n  File 'x', line 1\nKeyboardInterrupt\n"
    assert python_cause([("java.lang.RuntimeException", traceback)]) == (
        "KeyboardInterrupt",
        False,
    )


def test_a_java_only_failure_has_no_python_cause() -> None:
    assert python_cause(_JOB) is None
    assert python_cause([]) is None


class _FakeJavaException:
    """The py4j proxy of a Java exception chain."""

    def __init__(self, chain: list[tuple[str, str]]) -> None:
        self._chain = chain
        self._target_id = "o1"

    def getClass(self) -> Any:
        name = self._chain[0][0]
        return type("Class", (), {"getName": staticmethod(lambda: name)})()

    def getMessage(self) -> str:
        return self._chain[0][1]

    def getCause(self) -> Any:
        return _FakeJavaException(self._chain[1:]) if len(self._chain) > 1 else None

    def equals(self, other: Any) -> bool:
        return other is self


class _FakePy4JError(Py4JJavaError):
    def __str__(self) -> str:
        return "An error occurred while calling o1.hasNext.\n: java.lang.RuntimeException: ..."


def _error(chain: list[tuple[str, str]]) -> Py4JJavaError:
    return _FakePy4JError("An error occurred", _FakeJavaException(chain))


def test_the_job_failure_starts_with_its_cause_and_keeps_pyflinks_message() -> None:
    error = _error(THREAD_MODE)
    failure = job_failure(error)
    assert isinstance(failure, FlinkJobFailedError)
    lines = str(failure).splitlines()
    assert lines[0] == _EXPECTED_RUN
    assert lines[1].startswith("An agent run failed with it")
    assert lines[2:] == str(error).splitlines()
    assert failure.cause == _EXPECTED_RUN and failure.agent_run
    assert failure.java_error is error
    assert job_failure(_error(_JOB)) is None


def test_the_cause_line_is_redacted() -> None:
    chain = [
        (
            "pemja.core.PythonException",
            "<class 'ValueError'>: bad key sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
        )
    ]
    failure = job_failure(_error(chain))
    assert failure is not None
    assert "abcdefghijklmnop" not in str(failure).splitlines()[0]


@pytest.fixture
def raising_gateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Py4JJavaError]]:
    """py4j's call path raising the queued errors (the hook restored after the test)."""
    queued: list[Py4JJavaError] = []

    def get_return_value(*args: Any, **kwargs: Any) -> Any:
        raise queued.pop(0)

    monkeypatch.setattr(java_gateway, "get_return_value", get_return_value)
    yield queued


def test_the_hook_raises_the_job_failure_and_passes_other_errors(
    raising_gateway: list[Py4JJavaError],
) -> None:
    install_job_failure_hook()
    install_job_failure_hook()  # idempotent: one wrapper
    raising_gateway.append(_error(PROCESS_MODE))
    with pytest.raises(FlinkJobFailedError) as failed:
        java_gateway.get_return_value("answer", None, "o1", "hasNext")
    assert str(failed.value).splitlines()[0] == _EXPECTED_RUN
    assert failed.value.__cause__ is None and failed.value.__suppress_context__
    java_only = _error(_JOB)
    raising_gateway.append(java_only)
    with pytest.raises(Py4JJavaError) as passed:
        java_gateway.get_return_value("answer", None, "o1", "hasNext")
    assert passed.value is java_only
