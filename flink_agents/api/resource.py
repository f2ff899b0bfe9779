"""Resources an agent uses (chat models, tools, prompts) and how they are described.

`ResourceType`, `ResourceDescriptor` and `ResourceName` are upstream's (Apache Flink
Agents): a descriptor names its class as a class, a dotted path, a `ResourceName`
constant, or upstream's ``target_module`` / ``target_clazz`` pair. A name or type with no
implementation here raises `ResourceUnavailableError` when the plan is built.
"""

from __future__ import annotations

import importlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr

from flink_agents.api._class_path import import_class
from flink_agents.api._java_wrappers import JavaResourceWrapper, java_wrapper_refusal
from flink_agents.api._resource_names import ResourceName, class_name_here
from flink_agents.api.errors import UnknownOptionError
from flink_agents.api.resource_context import ResourceContext

if TYPE_CHECKING:
    from flink_agents.api.metric_group import MetricGroup

__all__ = [
    "UPSTREAM_TUNING_OPTIONS",
    "Resource",
    "ResourceDescriptor",
    "ResourceName",
    "ResourceType",
    "SerializableResource",
    "bind_resource_metric_group",
    "get_resource_class",
    "release_resource_metric_group",
    "resource_metric_group",
]

_LOG = logging.getLogger(__name__)

_REQUEST_METRIC_GROUP: ContextVar[Callable[[], MetricGroup] | None] = ContextVar(
    "flink_agents_request_metric_group", default=None
)


@contextmanager
def resource_metric_group(group: Callable[[], MetricGroup]) -> Iterator[None]:
    """While the block runs (in this context and copies of it), every resource's
    `Resource.metric_group` is ``group()``: the runtime binds the running action's metric
    group around each action. Resources are shared by all actions and all runs; the
    binding is not, so one run's metrics never land in another action's group."""
    token = bind_resource_metric_group(group)
    try:
        yield
    finally:
        release_resource_metric_group(token)


def bind_resource_metric_group(
    group: Callable[[], MetricGroup],
) -> Token[Callable[[], MetricGroup] | None]:
    """`resource_metric_group` without a context manager (the runtime's per-action
    path): binds ``group`` until `release_resource_metric_group` gets the token back."""
    return _REQUEST_METRIC_GROUP.set(group)


def release_resource_metric_group(token: Token[Callable[[], MetricGroup] | None]) -> None:
    """Ends the binding `bind_resource_metric_group` made (in the same context)."""
    _REQUEST_METRIC_GROUP.reset(token)


class ResourceType(str, Enum):
    """The kinds of resource an agent can declare and look up by name (upstream's members).

    Every member has an implementation here.
    """

    CHAT_MODEL = "chat_model"
    CHAT_MODEL_CONNECTION = "chat_model_connection"
    TOOL = "tool"
    EMBEDDING_MODEL = "embedding_model"
    EMBEDDING_MODEL_CONNECTION = "embedding_model_connection"
    VECTOR_STORE = "vector_store"
    PROMPT = "prompt"
    MCP_SERVER = "mcp_server"
    SKILLS = "skills"


UPSTREAM_TUNING_OPTIONS: frozenset[str] = frozenset(
    {
        "extract_reasoning",
        "json_prefill",
        "keep_alive",
        "logprobs",
        "num_ctx",
        "reasoning_effort",
        "request_timeout",
        "reuse_client",
        "skip_length_check",
        "strict",
        "text_type",
        "think",
        "top_logprobs",
        "truncate",
    }
)
"""Tuning options some of upstream's (Apache Flink Agents') provider classes take (Ollama's
``think`` and ``keep_alive``, ``extract_reasoning``, ``request_timeout``...). Upstream's
resources ignore a keyword they do not declare, and its agents pass these to classes that
have no use for them (an OpenAI setup given ``think=False``): a class here that does not
take one ignores it with a warning, once per class and option. Any other undeclared
keyword is refused (`UnknownOptionError`): a misspelt option never passes silently."""

_warned_ignored: set[tuple[str, str]] = set()


def _ignored_upstream_options(cls: type[Resource], data: dict[str, Any]) -> list[str]:
    """The keywords of `UPSTREAM_TUNING_OPTIONS` in ``data`` that ``cls`` does not take
    (warned about once per class and option)."""
    if cls.model_config.get("extra") == "allow":
        return []
    known = cls.option_names()
    ignored = [o for o in data if o in UPSTREAM_TUNING_OPTIONS and o not in known]
    for option in ignored:
        if (cls.__qualname__, option) not in _warned_ignored:
            _warned_ignored.add((cls.__qualname__, option))
            _LOG.warning(
                "%s does not take upstream's option %r: ignored, as upstream ignores it",
                cls.__name__,
                option,
            )
    return ignored


class Resource(BaseModel, ABC):
    """Base of every resource: a pydantic model that knows its `ResourceType`.

    ``get_resource`` is set by the runtime so a resource can look up others by
    name (a chat model setup finds its connection and its tools this way). Upstream's
    ``resource_context=`` keyword (a `ResourceContext`) gives the same: its
    ``get_resource``.

    A resource class declares its options as fields: a keyword it does not declare
    raises `UnknownOptionError` naming the closest ones (a class may opt out with
    ``model_config = ConfigDict(extra="allow")``). Provider extras go in a declared
    dict field, such as a chat model setup's ``params``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    get_resource: Callable[[str, ResourceType], Resource] | None = Field(
        default=None, exclude=True, repr=False
    )
    """Looks up another resource of the same agent by name and type."""

    _metric_group: MetricGroup | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        # Defined so that pydantic wraps this (it initialises the private attribute, then
        # calls it) instead of putting in a model_post_init that ends the chain: a class
        # after Resource in a subclass's MRO still gets its call (as `RequestLimitOptions`).
        super().model_post_init(context)

    def __init__(self, /, **data: Any) -> None:
        type(self).check_options(data)
        for option in _ignored_upstream_options(type(self), data):
            data.pop(option)
        if "name" not in type(self).model_fields:
            # Upstream's resources take (and ignore) a ``name``: the agent's attribute or
            # `add_resource` names a resource, here as there.
            data.pop("name", None)
        context = data.pop("resource_context", None)
        if context is not None:
            if not isinstance(context, ResourceContext) and not callable(
                getattr(context, "get_resource", None)
            ):
                raise TypeError(
                    f"resource_context must be a ResourceContext, not {type(context).__name__}"
                )
            if data.get("get_resource") is not None:
                raise ValueError("give resource_context or get_resource, not both")
            data["get_resource"] = context.get_resource
        super().__init__(**data)

    @property
    def resource_context(self) -> ResourceContext | None:
        """Upstream's way to the agent's other resources (``get_resource(name, type)``);
        None until the runtime has given this resource its ``get_resource``."""
        lookup = self.get_resource
        return _LookupContext(lookup) if lookup is not None else None

    @property
    def metric_group(self) -> MetricGroup | None:
        """The metric group this resource records into: inside an action, the action's
        (bound for the request, `resource_metric_group`); elsewhere the one given to
        `set_metric_group`, or None. Read it when a request starts and record into what
        was read: another action may use the resource meanwhile."""
        bound = _REQUEST_METRIC_GROUP.get()
        return bound() if bound is not None else self._metric_group

    def set_metric_group(self, metric_group: MetricGroup | None) -> None:
        """Give this resource a metric group of its own (used outside actions: inside
        one the action's group wins)."""
        self._metric_group = metric_group

    @classmethod
    def option_names(cls) -> dict[str, str]:
        """Every keyword the class takes (field names and their aliases), each mapped to
        the name of its field."""
        names: dict[str, str] = {}
        for field_name, field in cls.model_fields.items():
            names[field_name] = field_name
            aliases: list[Any] = [field.alias]
            validation = field.validation_alias
            aliases.extend(
                validation.choices if isinstance(validation, AliasChoices) else [validation]
            )
            for alias in aliases:
                if isinstance(alias, str):
                    names[alias] = field_name
        return names

    @classmethod
    def check_options(cls, options: Iterable[str]) -> None:
        """Raise `UnknownOptionError` for a keyword the class does not take, and
        `ValueError` when two keywords name the same option."""
        if cls.model_config.get("extra") == "allow":
            return
        known = cls.option_names()
        known.setdefault("resource_context", "get_resource")  # upstream's keyword
        known.setdefault("name", "name")  # upstream's keyword, ignored (see __init__)
        given: dict[str, str] = {}
        for option in options:
            if option in UPSTREAM_TUNING_OPTIONS and option not in known:
                continue  # ignored, with a warning (see __init__)
            field_name = known.get(option)
            if field_name is None:
                public = [name for name in known if name != "get_resource"]
                raise UnknownOptionError.for_option(cls.__name__, option, public, listed=public)
            if field_name in given:
                raise ValueError(
                    f"{cls.__name__}: {given[field_name]!r} and {option!r} are the same "
                    "option; give one of them"
                )
            given[field_name] = option

    @classmethod
    @abstractmethod
    def resource_type(cls) -> ResourceType:
        """Which kind of resource this is."""

    def open(self) -> None:
        """Called by the runtime when it has built the resource for an engine (upstream's
        hook): take what the resource holds while the engine lives. Nothing by default."""

    def close(self) -> None:
        """Called by the runtime when the engine that built the resource closes (upstream's
        hook): give back what `open` took. Nothing by default. A resource shared by
        engines (one instance declared on the agent) is opened and closed once per engine."""


class _LookupContext(ResourceContext):
    def __init__(self, lookup: Callable[[str, ResourceType], Resource]) -> None:
        self._lookup = lookup

    def get_resource(self, name: str, resource_type: ResourceType) -> Resource:
        return self._lookup(name, resource_type)


class SerializableResource(Resource, ABC):
    """A resource that is plain data (a prompt, say) and may be declared as an instance."""


class ResourceDescriptor:
    """How to build a resource: its class and constructor arguments.

    The class may be given as a class, a class path (``"my_pkg.models.MyConnection"`` or
    ``"my_pkg.models:MyConnection"``), a `ResourceName` constant, or upstream's
    ``target_module`` and ``target_clazz``. Arguments come as keywords, as an
    ``arguments`` dict, or both (the keywords win):

    >>> ResourceDescriptor(clazz=ResourceName.ChatModel.ANTHROPIC_SETUP, connection="claude")
    >>> ResourceDescriptor(target_module="my_pkg.models", target_clazz="MyConnection",
    ...                    arguments={"api_key": "..."})
    """

    def __init__(
        self,
        /,
        clazz: type[Resource] | str | None = None,
        *,
        target_module: str | None = None,
        target_clazz: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if clazz is None:
            if not target_module or not target_clazz:
                raise ValueError(
                    "ResourceDescriptor needs the resource class: clazz=..., or "
                    "target_module=... and target_clazz=..."
                )
            clazz = f"{target_module}.{target_clazz}"
        elif target_module is not None or target_clazz is not None:
            raise ValueError("give clazz or target_module and target_clazz, not both")
        if isinstance(clazz, str) and not clazz:
            raise ValueError("ResourceDescriptor: clazz is empty")
        self._given: type[Resource] | str = clazz
        self._class: type[Resource] | None = None
        self.arguments: dict[str, Any] = {**(arguments or {}), **kwargs}
        """The constructor arguments."""
        if (
            isinstance(clazz, type)
            and issubclass(clazz, Resource)
            and not issubclass(clazz, JavaResourceWrapper)  # refused with the plan
        ):
            self._class = clazz
            clazz.check_options(self.arguments)  # a class at hand: check its options now

    @property
    def target_module(self) -> str:
        """The module of the class (as given: a `ResourceName` keeps upstream's path)."""
        return self._split()[0]

    @property
    def target_clazz(self) -> str:
        """The class name (as given)."""
        return self._split()[1]

    def _split(self) -> tuple[str, str]:
        given = self._given
        if isinstance(given, type):
            return given.__module__, given.__qualname__
        if ":" in given:
            module, _, qualname = given.partition(":")
            return module, qualname
        module, _, name = given.rpartition(".")
        return module, name

    @property
    def clazz(self) -> type[Resource]:
        """The resource class, imported on first use (`resolve_class`)."""
        return self.resolve_class()

    def check(self) -> None:
        """Raise `ResourceUnavailableError` when the class is one upstream has and this
        project does not, and `UnknownOptionError` when an argument is no option of the
        class (a class given by path is imported for that; one that cannot be imported
        here raises `ImportError`)."""
        self.resolve_class().check_options(self.arguments)

    def resolve_class(self) -> type[Resource]:
        """The resource class: `ResourceUnavailableError` for a name of something not
        here (`ResourceName`) or a Java wrapper class, `ImportError` when its module
        cannot be imported, `TypeError` when it is no `Resource` class."""
        if self._class is not None:
            return self._class
        given = self._given
        cls = import_class(class_name_here(given)) if isinstance(given, str) else given
        if not (isinstance(cls, type) and issubclass(cls, Resource)):
            raise TypeError(f"{given!r} is not a Resource class")
        if issubclass(cls, JavaResourceWrapper):  # upstream's, for a Java runtime
            raise java_wrapper_refusal(cls)
        self._class = cls
        return cls

    def build(
        self, get_resource: Callable[[str, ResourceType], Resource] | None = None
    ) -> Resource:
        """A new resource instance."""
        return self.resolve_class()(get_resource=get_resource, **self.arguments)

    def _key(self) -> tuple[str, str]:
        return self._split()

    def __repr__(self) -> str:
        name = self._given if isinstance(self._given, str) else self._given.__qualname__
        return f"ResourceDescriptor({name}, {sorted(self.arguments)})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ResourceDescriptor)
            and self._key() == other._key()
            and self.arguments == other.arguments
        )

    def __hash__(self) -> int:
        # Argument values may be unhashable (lists, dicts): their names are enough.
        return hash((self._key(), tuple(sorted(self.arguments))))

    def __getstate__(self) -> dict[str, Any]:
        # A class given by path is imported again where the descriptor lands.
        state = dict(self.__dict__)
        if isinstance(self._given, str):
            state["_class"] = None
        return state


def get_resource_class(module_path: str, class_name: str) -> type[Resource]:
    """The resource class ``class_name`` of module ``module_path`` (upstream's helper);
    `ResourceUnavailableError` for one this project does not have."""
    path = class_name_here(f"{module_path}.{class_name}")
    module_name, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module_name), name)
    if not (isinstance(cls, type) and issubclass(cls, Resource)):
        raise TypeError(f"{module_path}.{class_name} is not a Resource class")
    if issubclass(cls, JavaResourceWrapper):
        raise java_wrapper_refusal(cls)
    return cls
