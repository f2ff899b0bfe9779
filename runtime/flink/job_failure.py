"""A failed Flink job names its Python cause on the first line.

When a job fails (``env.execute()``, iterating ``execute_and_collect()``), PyFlink raises a
``Py4JJavaError`` whose message is a Java stack trace of a dozen ``Caused by:`` sections;
the Python exception that failed the job (an agent run's, or one from another Python
function) sits at the bottom: in thread mode as a ``pemja.core.PythonException`` (``<class
'module.Type'>: message``), in process mode as the worker's traceback inside the message of
a ``RuntimeException`` (``Error received from SDK harness ...: Traceback ...``).

`install_job_failure_hook` (the agents environment installs it) wraps py4j's call path
after PyFlink's own hook: a ``Py4JJavaError`` with a Python exception in its causes becomes
a `FlinkJobFailedError` whose first line is that exception (an agent run's failure as its
``Type: message (action, event, key, seq)``), followed by PyFlink's message. Other Java
errors pass unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from flink_agents.runtime.errors import FlinkJobFailedError
from flink_agents.runtime.flink.compat.py4j import wrap_return_value

__all__ = ["JavaCause", "install_job_failure_hook", "job_failure", "python_cause"]

JavaCause = tuple[str, str]
"""A Java exception of a cause chain: its class name and its message."""

_PEMJA_EXCEPTION = "pemja.core.PythonException"
_PEMJA_MESSAGE = re.compile(r"<class '(?P<type>[\w.]+)'>: ?(?P<message>.*)", re.DOTALL)
_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION_LINE = re.compile(r"(?P<type>[A-Za-z_][\w.]*)(?:: ?(?P<message>.*))?")
_AGENT_RUN_FAILED = "AgentRunFailedError"
_AGENT_RUN_PREFIX = "an agent run failed: "
_MAX_CAUSES = 64
_HOOKED = "__flink_agents_job_failure_hook__"


def _from_traceback(text: str) -> tuple[str, str] | None:
    """Type and message of the exception a Python traceback text ends with."""
    start = text.rfind(_TRACEBACK)
    if start < 0:
        return None
    lines = text[start + len(_TRACEBACK) :].splitlines()
    for index, line in enumerate(lines):
        if not line.strip() or line[:1].isspace():
            continue  # the frames
        match = _EXCEPTION_LINE.fullmatch(line.rstrip())
        if match is None:
            return None
        message = [match["message"] or "", *lines[index + 1 :]]
        return match["type"], "\n".join(message).strip()
    return None


def _python_exception(cause: JavaCause) -> tuple[str, str] | None:
    class_name, message = cause
    if class_name == _PEMJA_EXCEPTION:
        match = _PEMJA_MESSAGE.match(message.strip())
        if match is not None:
            return match["type"], match["message"].strip()
    return _from_traceback(message)


def python_cause(chain: Sequence[JavaCause]) -> tuple[str, bool] | None:
    """The Python exception in a Java cause chain (outermost first; the innermost Python
    exception wins) as one line, ``Type: message``, and whether it is an agent run's
    failure; None when there is none."""
    for cause in reversed(chain):
        found = _python_exception(cause)
        if found is None:
            continue
        qualified, message = found
        first = message.splitlines()[0].strip() if message else ""
        name = qualified.rsplit(".", 1)[-1]
        if name == _AGENT_RUN_FAILED:
            return first.removeprefix(_AGENT_RUN_PREFIX), True
        return (f"{name}: {first}" if first else name), False
    return None


def _java_chain(java_exception: Any) -> list[JavaCause]:
    chain: list[JavaCause] = []
    current = java_exception
    while current is not None and len(chain) < _MAX_CAUSES:
        chain.append((str(current.getClass().getName()), str(current.getMessage() or "")))
        cause = current.getCause()
        if cause is None or cause.equals(current):
            break
        current = cause
    return chain


def job_failure(error: Any) -> FlinkJobFailedError | None:
    """The `FlinkJobFailedError` for a ``Py4JJavaError`` with a Python exception in its
    causes; None for other errors (or when the chain cannot be read)."""
    java_exception = getattr(error, "java_exception", None)
    if java_exception is None:
        return None
    try:
        found = python_cause(_java_chain(java_exception))
        if found is None:
            return None
        cause, agent_run = found
        return FlinkJobFailedError(cause, error, agent_run=agent_run)
    except Exception:  # the JVM is gone: leave the error as it is
        return None


def install_job_failure_hook() -> None:
    """Make failed jobs raise `FlinkJobFailedError` (see the module doc); call once PyFlink's
    gateway is up (PyFlink installs its own hook then; this one wraps it). Idempotent."""
    from py4j.protocol import Py4JJavaError  # pyright: ignore[reportMissingImports]

    def hooked(current: Callable[..., Any]) -> Callable[..., Any]:
        def get_return_value(*args: Any, **kwargs: Any) -> Any:
            try:
                return current(*args, **kwargs)
            except Py4JJavaError as error:
                failure = job_failure(error)
                if failure is None:
                    raise
                raise failure from None

        return get_return_value

    wrap_return_value(hooked, _HOOKED)  # py4j's call path: see compat.py4j
