"""`TriggerCondition`: an action's condition expression, checked, compiled and evaluated.

Upstream's dialect of CEL (the Common Expression Language) over an event: ``type`` (its
type string), ``id``, ``EventType`` (the built-in types by name), ``attributes`` (a map)
and each attribute by its name (``score > 5``; ``type``, ``id`` and ``EventType`` win over
attributes of those names). ``has(score)`` is true when the event has that attribute and
``has(order.total)`` when each step of the path exists. Refused when the plan is built,
with upstream's categories (`TriggerConditionError`): what does not parse (``syntax``); a
bare path that is no comparison (``a.b``, ``EventType.InputEvent``) and the comprehension
macros ``all``, ``exists``, ``exists_one``, ``filter``, ``map``
(``unsupported_construct``); an ``EventType`` member that does not exist
(``unknown_event_type``); an unknown function or a constant that is not Boolean
(``type_check``); the ``attributes`` map as a whole (``size(attributes)``,
``attributes[name]``: ``referenced_attributes``). Evaluation is pure (the event alone
decides), so a replayed event triggers the same actions.

CEL comes from the ``common-expression-language`` package (the ``cel`` extra). The compiled
program does not pickle: a condition pickles as its source and compiles again where it is
unpickled (a Flink worker).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import BaseModel

from flink_agents.api.errors import TriggerConditionError
from flink_agents.api.events.event import Event
from flink_agents.api.events.event_type import EventType

if TYPE_CHECKING:
    import cel

__all__ = ["TriggerCondition"]

_EVENT_TYPES: dict[str, str] = {
    name: value
    for name, value in vars(EventType).items()
    if not name.startswith("_") and isinstance(value, str)
}
_FRAMEWORK = frozenset({"type", "id", "EventType"})
_CONVERSIONS = frozenset({"int", "uint", "double", "string", "bool", "bytes"})
"""CEL's type conversion functions (names of types too)."""
_RESERVED = frozenset(
    {
        *_FRAMEWORK,
        "attributes",
        "true",
        "false",
        "null",
        "in",
        *_CONVERSIONS,
        "list",
        "has",
        "exists",
        "exists_one",
        "all",
        "filter",
        "map",
    }
)
"""Names that are never an attribute (upstream's list)."""
_LITERALS = frozenset({"true", "false", "null"})
_DISALLOWED_MACROS = frozenset({"all", "exists", "exists_one", "filter", "map"})
_STANDARD_FUNCTIONS = frozenset(
    {
        "size",
        "contains",
        "startsWith",
        "endsWith",
        "matches",
        *_CONVERSIONS,
        "dyn",
        "type",
        "duration",
        "timestamp",
        "getDate",
        "getDayOfMonth",
        "getDayOfWeek",
        "getDayOfYear",
        "getFullYear",
        "getHours",
        "getMilliseconds",
        "getMinutes",
        "getMonth",
        "getSeconds",
    }
)
"""CEL's standard functions: those upstream's type check knows (no extensions)."""

_TOKEN = re.compile(
    r"""(?P<space>\s+|//[^\n]*)
    |(?P<string>(?:[rR][bB]?|[bB][rR]?)?(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''
        |"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
    |(?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d+|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<punct>==|!=|<=|>=|&&|\|\||[-+*/%!<>?:.,\[\]{}()])
    |(?P<other>.)""",
    re.VERBOSE,
)


class _Token(NamedTuple):
    kind: str
    text: str
    start: int
    end: int


def _tokens(source: str) -> list[_Token]:
    """The tokens of an expression that parses (spaces and comments left out)."""
    found: list[_Token] = []
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup or "other"
        if kind != "space":
            found.append(_Token(kind, match.group(), match.start(), match.end()))
    return found


def _text(tokens: list[_Token], index: int) -> str:
    return tokens[index].text if 0 <= index < len(tokens) else ""


def _is_name(tokens: list[_Token], index: int) -> bool:
    """An identifier that is no field (not after a dot) and no call (not before ``(``)."""
    return (
        0 <= index < len(tokens)
        and tokens[index].kind == "ident"
        and _text(tokens, index - 1) != "."
        and _text(tokens, index + 1) != "("
    )


def _path_end(tokens: list[_Token], index: int) -> int:
    """The index after ``ident(.ident)*`` starting at ``index`` (``index`` when none)."""
    if index >= len(tokens) or tokens[index].kind != "ident":
        return index
    end = index + 1
    while _text(tokens, end) == "." and end + 1 < len(tokens) and tokens[end + 1].kind == "ident":
        end += 2
    return end


def _expand_has(source: str) -> str:
    """Upstream's ``has()``: ``has(score)`` -> ``has(attributes.score)``; ``has(a.b.c)`` ->
    each step present, the first as an attribute (a missing step is false, no error)."""
    tokens = _tokens(source)
    pieces: list[str] = []
    done = 0
    i = 0
    while i < len(tokens):
        if tokens[i].text == "has" and _text(tokens, i - 1) != "." and _text(tokens, i + 1) == "(":
            end = _path_end(tokens, i + 2)
            if end > i + 2 and _text(tokens, end) == ")":
                parts = [tokens[j].text for j in range(i + 2, end, 2)]
                checks = [] if parts[0] in _RESERVED else [f"has(attributes.{parts[0]})"]
                checks += [f"has({'.'.join(parts[: k + 1])})" for k in range(1, len(parts))]
                if checks:
                    pieces += [source[done : tokens[i].start], f"({' && '.join(checks)})"]
                    done = tokens[end].end
                i = end + 1
                continue
        i += 1
    return "".join([*pieces, source[done:]])


def _string_value(token: _Token) -> str | None:
    if token.kind != "string" or token.text[0] not in "'\"":
        return None  # raw, bytes
    try:
        value = ast.literal_eval(token.text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


class TriggerCondition:
    """One condition expression of an action: checked and compiled when built
    (`TriggerConditionError`), then ``matches(event)`` per event."""

    def __init__(self, source: str, action: str) -> None:
        self.source = source
        """The expression as written (trimmed)."""
        self.action = action
        """The action it triggers (named in errors)."""
        self._program, self._keys = self._compile()

    def __reduce__(self) -> tuple[Any, ...]:
        return (TriggerCondition, (self.source, self.action))

    def __repr__(self) -> str:
        return f"TriggerCondition({self.source!r}, action={self.action!r})"

    def _error(self, category: str, detail: str) -> TriggerConditionError:
        return TriggerConditionError(self.action, self.source, category, detail)

    def _compile(self) -> tuple[cel.Program, frozenset[str]]:
        try:
            import cel
        except ImportError:
            raise ImportError(
                f"action {self.action!r}: the trigger condition {self.source!r} needs CEL: "
                "pip install 'pyflink-agents[cel]' (Python 3.11+)"
            ) from None
        expanded = _expand_has(self.source)
        try:
            program = cel.compile(expanded)
        except ValueError as exc:
            raise self._error("syntax", str(exc)) from None
        tokens = _tokens(expanded)
        self._check_constructs(tokens)
        keys = self._attribute_keys(tokens)
        self._check_types(program)
        return program, keys

    def _check_constructs(self, tokens: list[_Token]) -> None:
        for i, token in enumerate(tokens):
            if (
                token.text in _DISALLOWED_MACROS
                and _text(tokens, i - 1) == "."
                and _text(tokens, i + 1) == "("
                and i + 2 < len(tokens)
                and tokens[i + 2].kind == "ident"
                and _text(tokens, i + 3) == ","
            ):
                raise self._error(
                    "unsupported_construct",
                    f"unsupported construct {token.text!r}; supported: ['has']",
                )
            if (
                token.text == "EventType"
                and _text(tokens, i - 1) != "."
                and (_text(tokens, i + 1) == ".")
            ):
                member = _text(tokens, i + 2)
                if member not in _EVENT_TYPES:
                    raise self._error(
                        "unknown_event_type", f"unknown EventType constant: EventType.{member}"
                    )
        inner = tokens
        while (
            len(inner) >= 2
            and inner[0].text == "("
            and inner[-1].text == ")"
            and _closing(inner, 0) == len(inner) - 1
        ):
            inner = inner[1:-1]
        if inner and inner[0].text not in _LITERALS and _path_end(inner, 0) == len(inner):
            hint = ""
            if inner[0].text == "EventType" and len(inner) == 3:
                hint = (
                    f" (type == EventType.{inner[2].text}, or the constant "
                    f"EventType.{inner[2].text} without quotes)"
                )
            raise self._error(
                "unsupported_construct",
                f"a standalone path is not a Boolean condition; use an explicit comparison{hint}",
            )

    def _attribute_keys(self, tokens: list[_Token]) -> frozenset[str]:
        """The attributes the expression reads (only those are handed to CEL)."""
        keys: set[str] = set()
        for i, token in enumerate(tokens):
            if not _is_name(tokens, i) or token.text in _FRAMEWORK:
                continue
            if token.text in _LITERALS or token.text == "in":
                continue
            if token.text != "attributes":
                keys.add(token.text)
                continue
            key: str | None = None
            if _text(tokens, i + 1) == "." and i + 2 < len(tokens):
                key = tokens[i + 2].text
            elif _text(tokens, i + 1) == "[" and _text(tokens, i + 3) == "]":
                key = _string_value(tokens[i + 2])
            elif _text(tokens, i - 1) == "in" and i >= 2:
                key = _string_value(tokens[i - 2])
            if key is None:
                raise self._error(
                    "referenced_attributes",
                    "the whole 'attributes' map cannot be used (a dynamic index "
                    "attributes[expr], size(attributes), attributes == ...); name an "
                    "attribute: attributes['key'], 'key' in attributes or has(attributes.key)",
                )
            keys.add(key)
        return frozenset(keys)

    def _check_types(self, program: cel.Program) -> None:
        for function in program.functions():
            if function[:1] not in "_@!-" and function not in _STANDARD_FUNCTIONS:
                raise self._error(
                    "type_check", f"failed the type check: undeclared function {function!r}"
                )
        if program.variables():
            return
        try:
            value = program.execute({})
        except Exception:  # a constant that fails fails on each event alike
            return
        if not isinstance(value, bool):
            raise self._error(
                "type_check",
                f"the condition must have a Boolean result, not {type(value).__name__}",
            )

    def matches(self, event: Event) -> bool:
        """Whether ``event`` satisfies the expression. Raises when it cannot be evaluated
        (an attribute it reads is missing or of the wrong type, a non-Boolean result)."""
        attributes = event.attributes
        values = {k: _cel_value(attributes[k]) for k in self._keys if k in attributes}
        variables: dict[str, Any] = {**values}
        variables.update(
            {
                "type": event.type,
                "id": str(event.id),
                "EventType": _EVENT_TYPES,
                "attributes": values,
            }
        )
        result = self._program.execute(variables)
        if not isinstance(result, bool):
            raise TypeError(f"the condition returned {type(result).__name__}, not a Boolean")
        return result


def _closing(tokens: list[_Token], index: int) -> int:
    """The index of the bracket closing the one at ``index``."""
    depth = 0
    for i in range(index, len(tokens)):
        if tokens[i].text in {"(", "[", "{"}:
            depth += 1
        elif tokens[i].text in {")", "]", "}"}:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _cel_value(value: Any) -> Any:
    """An attribute as CEL takes it: JSON-like values; models as their JSON form."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    if isinstance(value, Enum):
        return _cel_value(value.value)
    if isinstance(value, BaseModel):
        return _cel_value(value.model_dump(mode="json"))
    if isinstance(value, Mapping):
        return {str(k): _cel_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cel_value(v) for v in value]
    raise TypeError(f"an attribute of type {type(value).__name__} cannot be used in a condition")
