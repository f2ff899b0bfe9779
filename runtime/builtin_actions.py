"""The built-in chat action and tool action: the tool-calling loop.

``ChatRequestEvent`` -> chat action -> model call -> tool calls? -> ``ToolRequestEvent``
-> tool action -> ``ToolResponseEvent`` -> chat action -> model call ... -> no tool
calls -> ``ChatResponseEvent``.

Between turns the loop's state (`ChatLoopState`: the request messages, the assistant
messages and one tool message per call, nothing else, and the request's prompt
arguments) waits in the run (`RunState.chat_loops`) under the id of its pending tool
request. The actions here run with the runtime's `ActionContext` and use only its part
for built-in actions (`send_own_event`, `chat_loops`, the durable call numbers, approvals,
`tracing`, `tool_threads`).
Each model call goes through the chat model setup (`BaseChatModelSetup.achat`), which
puts its prompt first, so a setup that overrides ``chat`` or ``achat`` is the one
called. Each model call and each tool call goes through ``ctx.durable_execute_async``,
so with a durable call log they are made once across failures. A model call's durable
digest covers what it sends (a fingerprint of its messages, tools, model and parameters,
`flink_agents.runtime.model_request`; for a setup with its own ``chat``, of what that
receives); a tool call's covers the tool's name, its arguments and the call id. The
`ChatResult` envelope of each call goes to metrics and to the response event, not into
history.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import random
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, ValidationError

from flink_agents.api._callables import is_awaitable
from flink_agents.api.agents.agent import STRUCTURED_OUTPUT
from flink_agents.api.agents.types import json_candidates
from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.chat_models.chat_reply import as_chat_result
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.core_options import AgentExecutionOptions, ErrorHandlingStrategy
from flink_agents.api.errors import ChatModelError, UnsupportedContentBlockError
from flink_agents.api.events.chat_event import ChatError, ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, OutputEvent
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.resource import ResourceType
from flink_agents.api.tool_response import ToolResponse, raw_arguments
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.api.tools.tool import BaseTool, Tool
from flink_agents.api.tools.tool_execution_metadata_provider import (
    ToolExecutionMetadataProvider,
)
from flink_agents.api.tools.tool_parameter_injection import injected_arguments
from flink_agents.api.trace import (
    ExecutionEntityTypes,
    ExecutionProblemCategories,
    ExecutionReporters,
    LLMExecutionMetadataKeys,
    ToolExecutionMetadataKeys,
)
from flink_agents.plan.agent_plan import ActionSpec
from flink_agents.runtime import approvals
from flink_agents.runtime.action_context import ActionContext, builtin_action
from flink_agents.runtime.call_threads import CallThreadPool
from flink_agents.runtime.context_retrieval import context_retrieval_spec
from flink_agents.runtime.deadlines import Deadlines
from flink_agents.runtime.errors import (
    StructuredOutputError,
    ToolCallFailedError,
    ToolCallTimeoutError,
    ToolThreadsExhaustedError,
)
from flink_agents.runtime.execution_reports import MadeCalls
from flink_agents.runtime.metrics import (
    record_chat_call,
    record_chat_error,
    record_chat_retry,
    record_request_limits,
    record_tool_call,
    record_tool_thread_written_off,
)
from flink_agents.runtime.model_request import model_request_fingerprint
from flink_agents.runtime.request_gate import LimitReport, report_limits
from flink_agents.runtime.run_state import ChatLoopState, trusted_model
from flink_agents.runtime.skill.tools import BashTool

if TYPE_CHECKING:
    from flink_agents.api.content_blocks import ToolCallBlock
    from flink_agents.runtime.run_state import ApprovalDecision

__all__ = [
    "CHAT_ACTION",
    "TOOL_ACTION",
    "ChatLoopState",
    "ModelCallOutcome",
    "builtin_action_specs",
    "chat_model_action",
    "parse_structured_output",
    "retry_delay",
    "tool_call_action",
]

CHAT_ACTION = "_chat_model_action"
"""Name of the built-in chat action."""
TOOL_ACTION = "_tool_call_action"
"""Name of the built-in tool action."""

_LOG = logging.getLogger(__name__)

_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
_random = random.Random()


class ModelCallOutcome(BaseModel):
    """What one model call gave (this is what a durable call log records)."""

    model_config = ConfigDict(extra="forbid")

    result: ChatResult | None = None
    """The result, when the call succeeded."""
    error: ChatError | None = None
    """The provider error, when it failed."""
    retry_after: float | None = None
    """Seconds the provider asked to wait, when it said."""
    latency_s: float | None = None
    """How long the call took."""


def builtin_action_specs() -> list[ActionSpec]:
    """The chat action, the tool action and the context retrieval action
    (`flink_agents.runtime.context_retrieval`), as plan entries."""
    return [
        ActionSpec(
            name=CHAT_ACTION,
            event_types=(ChatRequestEvent.EVENT_TYPE, ToolResponseEvent.EVENT_TYPE),
            func=builtin_action(chat_model_action),
            config={},
            is_async=True,
        ),
        ActionSpec(
            name=TOOL_ACTION,
            event_types=(ToolRequestEvent.EVENT_TYPE,),
            func=builtin_action(tool_call_action),
            config={},
            is_async=True,
        ),
        context_retrieval_spec(),
    ]


# ---------------------------------------------------------------------------- chat action


async def chat_model_action(event: Event, ctx: ActionContext) -> None:
    """Start a chat request's loop, or continue it with its tool responses."""
    if isinstance(event, ChatRequestEvent):
        setup = _setup(ctx, event.model)
        if event.output_schema is not None:
            setup.check_structured_output()
        state = trusted_model(
            ChatLoopState,
            request_id=event.id,
            model=event.model,
            history=list(event.messages),
            prompt_args=event.prompt_args,
            output_schema=event.output_schema,
            model_calls=0,
        )
    elif isinstance(event, ToolResponseEvent):
        state = ctx.chat_loops.pop(str(event.request_id), None)
        if state is None:
            return  # a tool request some other action made: not part of a chat loop
        state.history.extend(_tool_messages(state.history[-1], event.responses))
        setup = _setup(ctx, state.model)
    else:
        return
    await _next_turn(ctx, setup, state)


def _setup(ctx: ActionContext, name: str) -> BaseChatModelSetup:
    setup = ctx.get_resource(name, ResourceType.CHAT_MODEL)
    if not isinstance(setup, BaseChatModelSetup):
        raise TypeError(f"chat model {name!r} is a {type(setup).__name__}, not a chat model setup")
    return setup


def _tool_messages(assistant: ChatMessage, responses: Sequence[ToolResponse]) -> list[ChatMessage]:
    """One tool message per call of ``assistant``, in call order."""
    by_id = {r.call_id: r for r in responses}
    messages = []
    for call in assistant.tool_calls:
        response = by_id.get(call.id) or ToolResponse.failure(
            call.id, call.name, f"no result for tool call {call.id!r}"
        )
        messages.append(ChatMessage.tool_result(response.to_result_block()))
    return messages


async def _next_turn(ctx: ActionContext, setup: BaseChatModelSetup, state: ChatLoopState) -> None:
    limit = ctx.config.get(AgentExecutionOptions.CHAT_MAX_MODEL_CALLS)
    if state.model_calls >= limit:
        _respond_error(ctx, state, _limit_error(limit), None)
        return
    tracing = ctx.tracing
    if tracing is None:
        outcome = await _call_model(ctx, setup, state)
    else:  # the same, inside a chat span
        with tracing.chat(ctx, setup, state.model, state.history) as span:
            outcome = await _call_model(ctx, setup, state)
            span.answered(outcome.result, outcome.error)
    if outcome.result is None:
        assert outcome.error is not None
        _respond_error(ctx, state, outcome.error, None)
        return
    result = outcome.result
    state.model_calls += 1
    message = result.message
    state.history.append(message)
    tool_calls = message.tool_calls
    if tool_calls:
        if state.model_calls >= limit:
            _respond_error(ctx, state, _limit_error(limit), result)
            return
        request = ToolRequestEvent(attributes={"model": state.model, "tool_calls": tool_calls})
        ctx.send_own_event(request)
        ctx.chat_loops[str(request.id)] = state
        return
    structured: Any = None
    error: ChatError | None = None
    if state.output_schema is not None:
        parser = ExecutionEntityTypes.PARSER
        reporting = ctx.reports_executions
        if reporting:
            ExecutionReporters.started(ctx, parser, STRUCTURED_OUTPUT)
        try:
            structured = parse_structured_output(message.text, state.output_schema)
        except StructuredOutputError as exc:
            if reporting:
                ExecutionReporters.failed(
                    ctx,
                    parser,
                    STRUCTURED_OUTPUT,
                    None,
                    exc,
                    ExecutionProblemCategories.MODEL_OUTPUT_PARSE_ERROR,
                )
            if _strategy(ctx) is ErrorHandlingStrategy.FAIL:
                raise
            error = ChatError(message=str(exc), kind="structured_output")
        else:  # where upstream's actions read it: response.extra_args[STRUCTURED_OUTPUT]
            if reporting:
                ExecutionReporters.succeeded(ctx, parser, STRUCTURED_OUTPUT)
            metadata = {**message.metadata, STRUCTURED_OUTPUT: structured}
            message = message.model_copy(update={"metadata": metadata})
    ctx.send_own_event(
        ChatResponseEvent(
            request_id=state.request_id,
            response=message,
            result=result,
            error=error,
            structured_output=structured,
        )
    )


def _limit_error(limit: int) -> ChatError:
    return ChatError(
        message=f"the chat request reached its limit of {limit} model calls",
        kind="max_model_calls",
    )


def _respond_error(
    ctx: ActionContext, state: ChatLoopState, error: ChatError, result: ChatResult | None
) -> None:
    last = next((m for m in reversed(state.history) if m.role is MessageRole.ASSISTANT), None)
    ctx.send_own_event(
        ChatResponseEvent(request_id=state.request_id, response=last, result=result, error=error)
    )


def _strategy(ctx: ActionContext) -> ErrorHandlingStrategy:
    return ctx.config.get(AgentExecutionOptions.ERROR_HANDLING_STRATEGY)


def _metric_label(setup: BaseChatModelSetup, name: str) -> str:
    return setup.model or name


async def _request_fingerprint(
    ctx: ActionContext,
    setup: BaseChatModelSetup,
    state: ChatLoopState,
    history: list[ChatMessage],
) -> str:
    """A fingerprint of what the model call sends (`model_request_fingerprint`) for the
    durable call's digest, so a record made for another question (another run at the same
    key and seq) never answers this one; empty when no durable call log records the call
    (it would only be hashed to be thrown away: `_call_model` does not ask then)."""
    params = setup.model_kwargs
    if setup.overrides_chat():
        # What the setup's own chat does with its input is its business: its input counts.
        messages = history
        params = {**params, "$prompt_args": state.prompt_args}
    else:
        messages = await setup.aapply_prompt(history, state.prompt_args)
    return model_request_fingerprint(
        model=state.model,
        connection=setup.connection,
        messages=messages,
        tools=ctx.tool_metadata(state.model),
        params=params,
    )


async def _call_model(
    ctx: ActionContext, setup: BaseChatModelSetup, state: ChatLoopState
) -> ModelCallOutcome:
    """One turn's model call, retried as the error-handling strategy says."""
    history = list(state.history)
    label = _metric_label(setup, state.model)
    metrics = ctx.agent_metric_group
    paced = False

    def limits_seen(report: LimitReport) -> None:
        nonlocal paced
        paced = report.paced
        if report.limiter is not None:
            record_request_limits(metrics, setup.connection, report)

    max_wait = ctx.config.get(AgentExecutionOptions.MAX_RETRY_WAIT)
    # Reports only when they are written (nothing is built for them otherwise).
    calls = (
        MadeCalls(ctx, ExecutionEntityTypes.LLM, ExecutionProblemCategories.MODEL_CALL_FAILED)
        if ctx.reports_executions
        else None
    )
    metadata = _llm_metadata(setup) if calls is not None else {}
    caller = _model_caller(
        setup, history, state.prompt_args, limits_seen, max_wait, calls, metadata
    )
    request = await _request_fingerprint(ctx, setup, state, history) if ctx.records_calls else ""
    first_call = ctx.next_call_index
    attempt = 0
    while True:
        paced = False  # a replayed call leaves it False: its wait is the backoff below
        try:
            raw = await ctx.durable_execute_async(
                caller, state.model, state.request_id, state.model_calls, attempt, request
            )
        finally:
            if calls is not None:
                calls.replayed((state.model_calls, attempt), state.model, metadata)
        outcome = raw if isinstance(raw, ModelCallOutcome) else ModelCallOutcome.model_validate(raw)
        if outcome.result is not None:
            record_chat_call(metrics, label, outcome.result, outcome.latency_s)
            _record_tokens(setup, label, outcome.result)
            return outcome
        error = outcome.error
        if error is None:
            raise TypeError("a model call outcome has neither a result nor an error")
        record_chat_error(metrics, label, error.kind)
        strategy = _strategy(ctx)  # read on a failure only: most calls succeed
        if strategy is ErrorHandlingStrategy.FAIL:
            # The error fails the run: after the restart the call is made again (a kept
            # error would be replayed, and fail every restart, forever).
            await ctx.forget_durable_calls(first_call)
            raise _model_error(outcome, error)
        config = ctx.config
        if (
            strategy is ErrorHandlingStrategy.RETRY
            and error.retryable
            and attempt < config.get(AgentExecutionOptions.MAX_RETRIES)
        ):
            # An overload the connection's limiter took pauses the connection for the
            # provider's retry-after: the retry waits its turn there, not a backoff too.
            wait = (
                0.0
                if paced
                else retry_delay(
                    attempt,
                    config.get(AgentExecutionOptions.RETRY_WAIT_INTERVAL),
                    max_wait,
                    outcome.retry_after,
                )
            )
            record_chat_retry(metrics, label, wait)
            tracing = ctx.tracing
            if tracing is not None:
                tracing.chat_retry(error.kind, wait)
            await _sleep(wait)
            attempt += 1
            continue
        outcome.error = error.model_copy(update={"attempts": attempt + 1})
        return outcome


def _record_tokens(setup: BaseChatModelSetup, label: str, result: ChatResult) -> None:
    """Upstream's token counters of a model call in the action's metric group
    (`BaseChatModelSetup._record_token_metrics`), when both counts are known; the agent's
    ``chatModel`` counters are `record_chat_call`'s. The group is the setup's, read here:
    inside the action it is the action's (bound for the whole action execution)."""
    usage = result.usage
    if usage.input_tokens is None or usage.output_tokens is None:
        return
    setup._record_token_metrics(  # pyright: ignore[reportPrivateUsage]
        result.model or label, usage.input_tokens, usage.output_tokens, setup.metric_group
    )


def _llm_metadata(setup: BaseChatModelSetup) -> dict[str, Any]:
    """The metadata of a model call's execution reports: the provider's model name."""
    return {} if setup.model is None else {LLMExecutionMetadataKeys.MODEL: setup.model}


def _model_error(outcome: ModelCallOutcome, error: ChatError) -> ChatModelError:
    """The `ChatModelError` of a model call's failed outcome."""
    return ChatModelError(
        error.message,
        status_code=error.status_code,
        retryable=error.retryable,
        retry_after=outcome.retry_after,
        provider=error.provider,
        kind=error.kind,
    )


def retry_delay(
    attempt: int, base: float, max_wait: float, retry_after: float | None = None
) -> float:
    """Seconds to wait before retry ``attempt + 1``: ``base * 2**attempt`` (at most
    ``max_wait``) scaled by a random factor in [0.5, 1], or the server's ``retry_after``
    when that is longer; never more than ``max_wait`` either way (a ``retry-after`` of an
    hour does not park a run for an hour)."""
    backoff = min(max_wait, base * 2.0 ** min(attempt, 64)) * _random.uniform(0.5, 1.0)
    if retry_after is not None and retry_after > backoff:  # False for NaN
        backoff = retry_after
    return max(0.0, min(max_wait, backoff))


def _model_caller(
    setup: BaseChatModelSetup,
    history: list[ChatMessage],
    prompt_args: Mapping[str, Any],
    limits_seen: Callable[[LimitReport], None],
    max_wait: float,
    calls: MadeCalls | None,
    metadata: Mapping[str, Any],
) -> Callable[[str, UUID, int, int, str], Awaitable[ModelCallOutcome]]:
    """The durable call of one model turn; a pause of the connection's limiter after an
    overload holds it (and lasts) ``max_wait`` seconds at most (``max-retry-wait-interval-s``).
    Each call made is reported to ``calls`` when given (started, then succeeded or failed,
    with ``metadata``)."""

    async def call_chat_model(
        model: str, request_id: UUID, turn: int, attempt: int, request: str
    ) -> ModelCallOutcome:
        # The arguments identify the call for a durable call log (``request`` is the
        # fingerprint of the messages, tools, model and parameters the closure holds).
        started = time.perf_counter()
        # The wait for the connection's limiter; its pauses capped as every retry wait is.
        with report_limits(max_wait) as limits:
            try:
                reply: Any = await setup.achat(history, prompt_args or None)
            except ChatModelError as exc:
                return ModelCallOutcome(
                    error=ChatError.from_model_error(exc),
                    retry_after=exc.retry_after,
                    latency_s=_call_latency(started, limits),
                )
            except UnsupportedContentBlockError as exc:
                return ModelCallOutcome(
                    error=ChatError(
                        message=str(exc), kind="unsupported_content", provider=exc.provider
                    ),
                    latency_s=_call_latency(started, limits),
                )
            finally:
                limits_seen(limits)
        try:
            # A setup written for the upstream API may answer with the assistant message.
            result = as_chat_result(reply, model=setup.model)
        except TypeError:
            raise TypeError(
                f"chat model {model!r} ({type(setup).__name__}) returned "
                f"{type(reply).__name__}, not a ChatResult"
            ) from None
        # Built from checked values: no need to validate again.
        return trusted_model(
            ModelCallOutcome,
            result=result,
            error=None,
            retry_after=None,
            latency_s=_call_latency(started, limits),
        )

    if calls is None:
        return call_chat_model

    @functools.wraps(call_chat_model)  # its identity for a durable call log
    async def reported(
        model: str, request_id: UUID, turn: int, attempt: int, request: str
    ) -> ModelCallOutcome:
        calls.start((turn, attempt), model, metadata)
        try:
            outcome = await call_chat_model(model, request_id, turn, attempt, request)
        except Exception as exc:
            calls.end(model, metadata, exc)
            raise
        error = outcome.error
        calls.end(model, metadata, None if error is None else _model_error(outcome, error))
        return outcome

    return reported


def _call_latency(started: float, limits: LimitReport) -> float:
    """Seconds since ``started`` (`time.perf_counter`), less the limiter's wait."""
    return max(0.0, time.perf_counter() - started - limits.wait_s)


def parse_structured_output(text: str, schema: type[BaseModel]) -> BaseModel:
    """``text`` parsed into ``schema``: the whole text, a fenced code block, or the
    outermost ``{...}`` in it. Raises `StructuredOutputError`."""
    last_error: ValidationError | None = None
    for candidate in json_candidates(text):
        try:
            return schema.model_validate_json(candidate)
        except ValidationError as exc:
            last_error = exc
    detail = f": {last_error.errors()[0]['msg']}" if last_error and last_error.errors() else ""
    raise StructuredOutputError(
        f"the model's answer does not parse as {schema.__name__}{detail}"
    ) from last_error


# ---------------------------------------------------------------------------- tool action


async def tool_call_action(event: Event, ctx: ActionContext) -> None:
    """Run a `ToolRequestEvent`'s calls and answer with one `ToolResponseEvent`."""
    if not isinstance(event, ToolRequestEvent):
        return
    setup = _setup(ctx, event.model) if event.model is not None else None
    allowed = setup.tools if setup is not None else None
    limit = ctx.config.get(AgentExecutionOptions.TOOL_CALL_MAX_PER_TURN)
    calls, over = event.tool_calls[:limit], event.tool_calls[limit:]
    decisions: Mapping[str, ApprovalDecision] = {}
    gated = _needing_approval(ctx, calls, allowed)
    if gated:
        decided = ctx.approval_decisions(event.id)
        if decided is None:  # none runs until a person decided every one
            _park(ctx, event, gated)
            return
        decisions = decided
    # Reports only when they are written (nothing is built for them otherwise).
    made = (
        MadeCalls(ctx, ExecutionEntityTypes.TOOL, ExecutionProblemCategories.TOOL_CALL_FAILED)
        if ctx.reports_executions
        else None
    )
    metadata: dict[str, dict[str, Any]] = {}
    caller = _tool_caller(ctx, allowed, setup, made, metadata)
    tracing = ctx.tracing

    def call(c: ToolCallBlock) -> Awaitable[Any]:
        decision = decisions.get(c.id)
        if decision is not None and not decision.approved:
            return _declined(c, decision)
        if made is None:
            pending = ctx.durable_execute_async(caller, c.name, c.input, c.id)
        else:
            call_metadata = metadata[c.id] = _tool_metadata(ctx, event.id, c)
            pending = _reported(
                ctx.durable_execute_async(caller, c.name, c.input, c.id),
                made,
                c.id,
                c.name,
                call_metadata,
            )
        return pending if tracing is None else tracing.tool_call(c.name, c.id, c.input, pending)

    if ctx.config.get(AgentExecutionOptions.TOOL_CALL_PARALLEL) and len(calls) > 1:
        # Durable call numbers are taken here, in call order.
        raw = await asyncio.gather(*[call(c) for c in calls])
    else:
        raw = [await call(c) for c in calls]
    responses = [r if isinstance(r, ToolResponse) else ToolResponse.model_validate(r) for r in raw]
    metrics = ctx.agent_metric_group
    for response in responses:
        record_tool_call(metrics, response.name, response.success, response.duration_s or 0.0)
    if over:
        responses.extend(_not_run(over, limit))
    ctx.send_own_event(
        ToolResponseEvent(attributes={"request_id": event.id, "responses": responses})
    )


async def _reported(
    pending: Awaitable[Any], calls: MadeCalls, call_id: str, name: str, metadata: dict[str, Any]
) -> Any:
    """``pending``'s outcome, reported ``reused`` when the durable call log replayed it."""
    try:
        return await pending
    finally:
        calls.replayed(call_id, name, metadata)


def _tool_metadata(ctx: ActionContext, request_id: UUID, call: ToolCallBlock) -> dict[str, Any]:
    """The metadata of a tool call's execution reports: its request and call ids, the
    tool's type and what the tool adds (`ToolExecutionMetadataProvider`)."""
    metadata: dict[str, Any] = {
        ToolExecutionMetadataKeys.TOOL_REQUEST_EVENT_ID: str(request_id),
        ToolExecutionMetadataKeys.TOOL_CALL_ID: call.id,
    }
    try:
        tool = ctx.get_resource(call.name, ResourceType.TOOL)
    except KeyError:
        return metadata
    if isinstance(tool, BaseTool):
        metadata[ToolExecutionMetadataKeys.TOOL_TYPE] = tool.tool_type().value
    if isinstance(tool, ToolExecutionMetadataProvider):
        try:
            extra = tool.get_tool_execution_metadata(dict(call.input))
        except Exception:  # its own metadata never fails the call
            _LOG.debug("tool %r: its execution metadata failed", call.name, exc_info=True)
        else:
            for key, value in (extra or {}).items():
                if value is not None:
                    metadata.setdefault(key, value)
    return metadata


def _needing_approval(
    ctx: ActionContext, calls: Sequence[ToolCallBlock], allowed: Collection[str] | None
) -> list[ToolCallBlock]:
    """The calls that wait for a person: of a tool declared ``requires_approval`` or named
    in ``tool-call.approval-required-tools`` (a call that could not run anyway, of an
    unknown tool or with arguments that are no JSON object, is not asked about)."""
    named = ctx.config.get(AgentExecutionOptions.TOOL_CALL_APPROVAL_REQUIRED_TOOLS)
    gated = []
    for c in calls:
        if (allowed is not None and c.name not in allowed) or raw_arguments(c.input) is not None:
            continue
        try:
            tool = ctx.get_resource(c.name, ResourceType.TOOL)
        except KeyError:
            continue
        if c.name in named or (isinstance(tool, BaseTool) and tool.requires_approval):
            gated.append(c)
    return gated


def _park(ctx: ActionContext, event: ToolRequestEvent, gated: Sequence[ToolCallBlock]) -> None:
    """The request waits for decisions: one `ApprovalRequest` per call goes out as an
    output of the run (exactly once, as outputs are), and the run parks."""
    timeout = ctx.config.get(AgentExecutionOptions.TOOL_CALL_APPROVAL_TIMEOUT)
    wait = approvals.new_wait(
        ctx.key, event, [(c.id, c.name, dict(c.input)) for c in gated], timeout
    )
    for request in wait.requests:
        ctx.send_own_event(OutputEvent(output=request))
    ctx.park(wait)
    ctx.agent_metric_group.get_counter("approvalRequests").inc(len(wait.requests))


async def _declined(c: ToolCallBlock, decision: ApprovalDecision) -> ToolResponse:
    """The error result of a call a person declined (or that timed out): not run."""
    return ToolResponse.failure(c.id, c.name, approvals.denial_message(c.name, decision))


def _not_run(over: Sequence[ToolCallBlock], limit: int) -> list[ToolResponse]:
    """Error results for the calls of one request past ``tool-call.max-per-turn``: not
    run, nor counted in the tools' metrics (their names are the model's, unchecked)."""
    asked = limit + len(over)
    _LOG.warning(
        "a tool request has %d calls; the %d past tool-call.max-per-turn (%d) were not run",
        asked,
        len(over),
        limit,
    )
    message = (
        f"not run: {asked} tool calls in one turn, more than the {limit} allowed "
        "(tool-call.max-per-turn); make fewer calls per turn"
    )
    return [ToolResponse.failure(c.id, c.name, f"tool {c.name!r} {message}") for c in over]


def _tool_caller(
    ctx: ActionContext,
    allowed: Collection[str] | None,
    setup: BaseChatModelSetup | None,
    made: MadeCalls | None,
    metadata: Mapping[str, dict[str, Any]],
) -> Callable[[str, dict[str, Any], str], Awaitable[ToolResponse]]:
    """The durable call of one tool call; each call made is reported to ``made`` when
    given (with the call's ``metadata``, by call id)."""
    timeout = ctx.config.get(AgentExecutionOptions.TOOL_CALL_TIMEOUT)
    threads = ctx.tool_threads

    async def call_tool(name: str, arguments: dict[str, Any], call_id: str) -> ToolResponse:
        # The arguments identify the call for a durable call log.
        started_at = datetime.now(timezone.utc)
        started = time.perf_counter()

        def timing() -> dict[str, Any]:
            return {"started_at": started_at, "duration_s": time.perf_counter() - started}

        def failed(message: str) -> ToolResponse:
            return ToolResponse.failure(call_id, name, message, **timing())

        try:
            tool = ctx.get_resource(name, ResourceType.TOOL)
        except KeyError:
            return failed(f"tool {name!r} does not exist")
        if allowed is not None and name not in allowed:
            return failed(f"tool {name!r} is not available (tools: {sorted(allowed)})")
        if not isinstance(tool, BaseTool):
            return failed(f"resource {name!r} is not a tool")
        if isinstance(tool, BashTool):  # what it may run is the asking setup's
            tool = tool.for_setup(setup, ctx.config)
        raw = raw_arguments(arguments)
        if raw is not None:  # the model's arguments were not a JSON object: not run
            return ToolResponse.invalid_arguments(call_id, name, raw, **timing())
        if isinstance(tool, FunctionTool) and tool.injected_args:
            # Injected parameters win over the model's: it cannot choose a tenant, say.
            try:
                arguments = {**arguments, **injected_arguments(tool.injected_args, ctx)}
            except (LookupError, TypeError) as exc:
                return failed(f"tool {name!r} could not run: {exc}")
        try:
            output = await _run_tool(tool, name, arguments, timeout, threads)
            return ToolResponse.from_output(call_id, name, output, **timing())
        except ToolCallTimeoutError as exc:
            if exc.written_off:
                record_tool_thread_written_off(ctx.agent_metric_group, name)
            return failed(f"tool {name!r} timed out after {_seconds(timeout)} s")
        except ToolThreadsExhaustedError as exc:  # never started: not a timeout
            return failed(f"tool {name!r} was not run: {exc}")
        except Exception as exc:  # a tool failure is the model's to read, not the job's
            return failed(f"tool {name!r} failed: {type(exc).__name__}: {exc}")

    if made is None:
        return call_tool

    @functools.wraps(call_tool)  # its identity for a durable call log
    async def reported(name: str, arguments: dict[str, Any], call_id: str) -> ToolResponse:
        call_metadata = metadata.get(call_id, {})
        made.start(call_id, name, call_metadata)
        try:
            response = await call_tool(name, arguments, call_id)
        except Exception as exc:
            made.end(name, call_metadata, exc)
            raise
        made.end(
            name,
            call_metadata,
            None if response.success else ToolCallFailedError(response.error or "failed"),
        )
        return response

    return reported


async def _run_tool(
    tool: BaseTool,
    name: str,
    arguments: dict[str, Any],
    timeout: float,
    threads: CallThreadPool,
) -> Any:
    """The tool's output; `ToolCallTimeoutError` when it takes longer than ``timeout``.

    A sync function tool, and a `Tool` subclass with a sync ``call``, run on the engine's
    tool threads (which write off a thread whose call timed out, and wait briefly for a
    tool that has been fast); anything else is awaited and cancelled at the timeout.
    """
    call = _sync_call(tool, arguments)
    if call is None:
        return await _within(tool.acall(**arguments), timeout)
    output = await threads.run(call, timeout, name)
    if is_awaitable(output):  # a plain function that returned a coroutine
        output = await _within(output, timeout)
    return output


def _sync_call(tool: BaseTool, arguments: dict[str, Any]) -> Callable[[], Any] | None:
    """What the tool threads run for a sync tool: a function tool's function with the
    arguments, or the sync ``call`` of a `Tool` subclass (whose inherited ``acall`` would
    run it on the loop's default executor, where a hung call keeps its thread); None for
    an async tool."""
    if isinstance(tool, FunctionTool):
        return None if tool.is_async else tool.bind(**arguments)
    if (
        isinstance(tool, Tool)
        and type(tool).acall is Tool.acall
        and not inspect.iscoroutinefunction(tool.call)
    ):
        return functools.partial(tool.call, **arguments)
    return None


class _AsyncToolCall:
    """An async tool call under its timeout: ``waiter`` is done when the call is, or when
    it timed out (at loop time ``at``)."""

    __slots__ = ("at", "waiter")

    def __init__(self, at: float, waiter: asyncio.Future[None]) -> None:
        self.at = at
        self.waiter = waiter


def _time_out(call: _AsyncToolCall, now: float) -> float | None:
    """At loop time ``now``: stop waiting for ``call`` if its time is up (None), else in
    how many seconds to look again."""
    waiter = call.waiter
    if waiter.done():
        return None
    left = call.at - now
    if left > 0:
        return left
    waiter.set_result(None)
    return None


_ASYNC_TOOL_CALLS: Deadlines[_AsyncToolCall] = Deadlines(_time_out)
"""The async tool calls with a timeout, per loop (one timer per loop, not per call)."""


def _finished(waiter: asyncio.Future[None], task: asyncio.Future[Any]) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def _within(awaitable: Awaitable[Any], timeout: float) -> Any:
    """``await awaitable``, cancelled with `ToolCallTimeoutError` after ``timeout`` s.

    It runs as a task of its own, so a tool that swallows its cancellation does not hold
    the run. Unlike `asyncio.wait_for`, a `TimeoutError` the tool raises itself stays its
    own.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(awaitable)
    waiter: asyncio.Future[None] = loop.create_future()
    task.add_done_callback(functools.partial(_finished, waiter))
    call = _AsyncToolCall(loop.time() + timeout, waiter)
    watch = _ASYNC_TOOL_CALLS.add(loop, call, timeout)
    try:
        await waiter
    finally:
        Deadlines.drop(watch, call)
        if not task.done():
            task.cancel()
            # It may swallow the cancellation and fail later: nobody reads that.
            task.add_done_callback(_ignore_outcome)
    if not task.done():  # timed out (its cancellation is under way)
        raise ToolCallTimeoutError(timeout)
    return task.result()


def _ignore_outcome(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _seconds(value: float) -> str:
    """``300`` for 300.0, ``0.05`` for 0.05: a number of seconds as it was given."""
    return str(int(value)) if value.is_integer() else repr(value)
