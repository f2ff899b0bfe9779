"""The error hierarchies: the trees drawn in the errors modules' docstrings are the real
ones, runtime errors share one root and keep their built-in bases, and users' import
paths still work."""

from __future__ import annotations

import builtins
import pickle
import re
from types import ModuleType

import pytest

from flink_agents.api import errors as api_errors
from flink_agents.runtime import errors
from flink_agents.runtime.errors import (
    ActionExecutionError,
    AgentRunFailedError,
    AgentRuntimeError,
    DurableCallFailedError,
    DurableError,
    FlinkSetupError,
    StructuredOutputError,
    ToolCallTimeoutError,
    ToolThreadsExhaustedError,
    UnhandledEventError,
)

_TREE_LINE = re.compile(r"^(?P<indent>[ │├└─]*)(?P<name>[A-Z]\w*)\b")


def drawn_tree(module: ModuleType) -> dict[str, str | None]:
    """Class name -> the name of its parent in the tree of ``module``'s docstring (None for
    a root)."""
    doc = module.__doc__ or ""
    block = [line[4:] for line in doc.splitlines() if line.startswith("    ")]
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in block:
        match = _TREE_LINE.match(line)
        if match is None:  # the continuation of a description
            continue
        depth = len(match["indent"])
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[match["name"]] = stack[-1][1] if stack else None
        stack.append((depth, match["name"]))
    return parents


def _class(module: ModuleType, name: str) -> type:
    found = getattr(module, name, None) or getattr(builtins, name)
    assert isinstance(found, type)
    return found


@pytest.mark.parametrize("module", [errors, api_errors], ids=lambda m: m.__name__)
def test_the_drawn_tree_is_the_real_one(module: ModuleType) -> None:
    tree = drawn_tree(module)
    defined = {
        name for name in module.__all__ if isinstance(getattr(module, name), type)
    }  # every error class is drawn
    assert defined <= set(tree)
    for name, parent in tree.items():
        cls = _class(module, name)
        if parent is not None:
            assert _class(module, parent) in cls.__bases__, f"{name} is not a {parent}"


def test_the_runtime_tree_has_one_root() -> None:
    tree = drawn_tree(errors)
    assert [name for name, parent in tree.items() if parent is None] == ["AgentRuntimeError"]
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), AgentRuntimeError)


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (ActionExecutionError("a", "e", "k", 1), RuntimeError),
        (UnhandledEventError("e", "k", 1), RuntimeError),
        (AgentRunFailedError(ValueError("x")), RuntimeError),
        (StructuredOutputError("x"), ValueError),
        (ToolCallTimeoutError(1.0), TimeoutError),
        (errors.JavaNotFoundError("x"), RuntimeError),
        (errors.ThreadModeUnavailableError("x"), RuntimeError),
        (errors.ProcessModeCheckpointingError("x"), RuntimeError),
        (errors.SessionClusterSetupError("x"), RuntimeError),
    ],
)
def test_built_in_bases_still_catch(error: Exception, builtin: type[Exception]) -> None:
    with pytest.raises(builtin):
        raise error
    with pytest.raises(AgentRuntimeError):
        raise error


def test_a_tool_timeout_says_how_long() -> None:
    error = ToolCallTimeoutError(2.5, written_off=True)
    assert str(error) == "timed out after 2.5 s"
    assert (error.timeout, error.written_off) == (2.5, True)


def test_no_free_tool_thread_names_the_option() -> None:
    error = ToolThreadsExhaustedError(4, 64)
    assert str(error) == (
        "no free tool thread: each of the 4 holds a call past its timeout, and 64 more run "
        "hung or blocked calls, the most tool-call.max-abandoned-threads allows"
    )
    assert not isinstance(error, TimeoutError)  # it never ran: not a timeout
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.threads, copy.abandoned) == (str(error), 4, 64)


def test_agent_run_failed_carries_its_cause_redacted() -> None:
    cause = ValueError("provider said no to api_key=sk-live-0123456789abcdef")
    try:
        raise AgentRunFailedError(cause)  # no `from`: the cause is still the cause
    except AgentRunFailedError as raised:
        error = raised
    assert error.__cause__ is cause
    assert error.__suppress_context__
    assert str(error).startswith("an agent run failed: ValueError: provider said no to api_key=")
    assert "sk-live-0123456789abcdef" not in str(error)


def test_action_execution_error_names_the_cause_first_then_the_run() -> None:
    error = ActionExecutionError("triage", "_input_event", "k1", 3, KeyError("missing"))
    assert str(error) == (
        "KeyError: 'missing' (action 'triage' on a _input_event event, key 'k1', seq 3)"
    )
    assert str(ActionExecutionError("triage", "_input_event", "k1", 3)) == (
        "action 'triage' failed on a _input_event event (key 'k1', seq 3)"
    )
    assert (error.action, error.event_type, error.key, error.seq) == (
        "triage",
        "_input_event",
        "k1",
        3,
    )


def test_a_failed_run_names_the_actions_cause_first() -> None:
    cause = ActionExecutionError("ask", "_input_event", "u1", 0, ValueError("no text"))
    assert str(AgentRunFailedError(cause)) == (
        "an agent run failed: ValueError: no text (action 'ask' on a _input_event event, "
        "key 'u1', seq 0)"
    )
    assert str(AgentRunFailedError(ValueError("injected"))) == (
        "an agent run failed: ValueError: injected"
    )


def test_causes_are_redacted() -> None:
    secret = ValueError("rejected key sk-ant-api03-abcdefghijklmnopqrstuvwxyz")
    for error in (
        ActionExecutionError("ask", "_input_event", "u1", 0, secret),
        AgentRunFailedError(ActionExecutionError("ask", "_input_event", "u1", 0, secret)),
    ):
        assert str(error).split(":")[0] in ("ValueError", "an agent run failed")
        assert "abcdefghijklmnop" not in str(error)


def test_a_replayed_call_failure_pickles() -> None:
    error = pickle.loads(pickle.dumps(DurableCallFailedError("a.b:C", "boom")))
    assert (error.error_type, error.error_message, str(error)) == ("a.b:C", "boom", "a.b:C: boom")
    assert isinstance(error, DurableError)


def test_users_import_paths() -> None:
    from flink_agents.runtime import durable

    for name in ("DurableError", "DurableStoreError", "DurableReplayError"):
        assert getattr(durable, name) is getattr(errors, name)
    assert durable.DurableCallFailedError is DurableCallFailedError


def test_flink_setup_errors_from_the_flink_package() -> None:
    flink = pytest.importorskip("flink_agents.runtime.flink")
    for name in (
        "FlinkSetupError",
        "JavaNotFoundError",
        "ThreadModeUnavailableError",
        "ProcessModeCheckpointingError",
        "SessionClusterSetupError",
    ):
        assert getattr(flink, name) is getattr(errors, name)
        assert issubclass(getattr(flink, name), FlinkSetupError)
