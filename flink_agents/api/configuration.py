"""Configuration options and the configuration interfaces (upstream's module).

`ConfigOption` is a typed option: its key, its type and its default. The project's
options are declared in `flink_agents.api.core_options` (`AgentExecutionOptions`,
`AgentConfigOptions`, `MemoryEventOptions`); `AgentConfiguration` there implements
`Configuration`. `agent_section` reads the ``agent:`` section of a YAML file, as
``env.get_config(path)`` and Flink's ``config.yaml`` use it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from enum import Enum
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

import yaml

__all__ = [
    "ConfigOption",
    "Configuration",
    "ReadableConfiguration",
    "WritableConfiguration",
    "agent_options_in",
    "agent_section",
    "flatten_dict",
    "read_yaml_settings",
]

T = TypeVar("T")


class ConfigOption(Generic[T]):
    """A typed option: its key, its type and its default (``positive``: a number that
    must be greater than 0).

    >>> ConfigOption(key="myapp.threshold", config_type=float, default=0.5)
    """

    def __init__(
        self,
        key: str,
        config_type: type,
        default: T = None,
        description: str = "",
        *,
        positive: bool = False,
    ) -> None:
        self.key = key
        self.config_type = config_type
        self.default = default
        self.description = description
        self.positive = positive

    def get_key(self) -> str:
        """The key (upstream's accessor)."""
        return self.key

    def get_type(self) -> type:
        """The type of the value (upstream's accessor)."""
        return self.config_type

    def get_default_value(self) -> T:
        """The default value (upstream's accessor)."""
        return self.default

    def convert(self, value: Any) -> T:
        """``value`` as this option's type (strings are parsed; an enum matches its value
        or its name, in any case)."""
        if value is None:
            return cast(T, None)
        kind = self.config_type
        if isinstance(kind, type) and issubclass(kind, Enum):
            if isinstance(value, kind):
                return cast(T, value)
            text = str(value).strip()
            for member in kind:
                if text.lower() in (str(member.value).lower(), member.name.lower()):
                    return cast(T, member)
            raise ValueError(
                f"option {self.key!r}: {value!r} is not one of {[m.value for m in kind]}"
            )
        if kind is bool:
            if isinstance(value, bool):
                return cast(T, value)
            text = str(value).strip().lower()
            if text in ("true", "1", "yes", "on"):
                return cast(T, True)
            if text in ("false", "0", "no", "off"):
                return cast(T, False)
            raise ValueError(f"option {self.key!r}: {value!r} is not a boolean")
        if kind in (int, float, str):
            try:
                converted = kind(value)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"option {self.key!r}: {value!r} is not a {kind.__name__}"
                ) from exc
            if self.positive and not (isinstance(converted, (int, float)) and converted > 0):
                raise ValueError(f"option {self.key!r}: {value!r} is not greater than 0")
            return cast(T, converted)
        if kind is list and isinstance(value, str):
            return cast(T, [item.strip() for item in value.split(",") if item.strip()])
        return cast(T, value)

    def __repr__(self) -> str:
        return f"ConfigOption({self.key!r}, default={self.default!r})"


class WritableConfiguration(ABC):
    """Write access to a configuration."""

    @abstractmethod
    def set_str(self, key: str, value: str) -> Any:
        """Set a value by key."""

    @abstractmethod
    def set_int(self, key: str, value: int) -> Any:
        """Set an int value by key."""

    @abstractmethod
    def set_float(self, key: str, value: float) -> Any:
        """Set a float value by key."""

    @abstractmethod
    def set_bool(self, key: str, value: bool) -> Any:
        """Set a boolean value by key."""

    @abstractmethod
    def set(self, option: ConfigOption[Any], value: Any) -> Any:
        """Set an option's value."""


class ReadableConfiguration(ABC):
    """Read access to a configuration."""

    @abstractmethod
    def get_int(self, key: str, default: int | None = None) -> int | None:
        """The value of ``key`` as an int, or ``default`` when unset."""

    @abstractmethod
    def get_float(self, key: str, default: float | None = None) -> float | None:
        """The value of ``key`` as a float, or ``default`` when unset."""

    @abstractmethod
    def get_bool(self, key: str, default: bool | None = None) -> bool | None:
        """The value of ``key`` as a boolean, or ``default`` when unset."""

    @abstractmethod
    def get_str(self, key: str, default: str | None = None) -> str | None:
        """The value of ``key`` as a string, or ``default`` when unset."""

    @abstractmethod
    def get(self, option: ConfigOption[Any]) -> Any:
        """The value of an option (its default when unset)."""


class Configuration(WritableConfiguration, ReadableConfiguration, ABC):
    """Read and write access to a configuration."""


def flatten_dict(nested: Mapping[str, Any], parent_key: str = "", sep: str = ".") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` as ``{"a.b": 1}``: nested keys joined with ``sep``."""
    return dict(_flatten(nested, parent_key, sep))


def _flatten(nested: Mapping[str, Any], parent_key: str, sep: str) -> Iterator[tuple[str, Any]]:
    for key, value in nested.items():
        name = f"{parent_key}{sep}{key}" if parent_key else str(key)
        if isinstance(value, Mapping):
            yield from _flatten(cast(Mapping[str, Any], value), name, sep)
        else:
            yield name, value


def read_yaml_settings(path: str | Path) -> dict[str, Any]:
    """Every setting of the YAML file at ``path``, nested keys joined with dots (as Flink
    reads its ``config.yaml``). Raises `FileNotFoundError` for a missing file and
    `ValueError` for one that is not a YAML mapping."""
    source = Path(path)
    document = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
    if not isinstance(document, Mapping):
        raise ValueError(f"{source}: not a YAML mapping")
    return flatten_dict(cast(Mapping[str, Any], document))


def agent_options_in(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The agent options among dotted ``settings``: the keys that start with ``agent.``,
    without it."""
    return {
        key.removeprefix("agent."): value
        for key, value in settings.items()
        if key.startswith("agent.")
    }


def agent_section(path: str | Path) -> dict[str, Any]:
    """The options in the ``agent:`` section of the YAML file at ``path``, nested keys
    joined with dots (``agent: {event-log: {level: verbose}}`` is ``event-log.level``).

    Top-level keys that start with ``agent.`` count too (Flink's flat form). Raises
    `FileNotFoundError` for a missing file and `ValueError` for one that is not a YAML
    mapping.
    """
    return agent_options_in(read_yaml_settings(path))
