"""Agent options from Flink's configuration file, as a Flink job reads them.

`$FLINK_CONF_DIR/config.yaml` (Flink 2) holds them under a top-level `agent:` section,
nested or as dotted keys; the legacy `flink-conf.yaml` (flat `key: value` lines) as keys
prefixed with `agent.`. Options set in code on the agents environment take precedence:
the file is read when the environment is created, before any `get_config().set(...)`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = ["agent_options_from_conf_dir", "read_agent_options"]

_LOG = logging.getLogger(__name__)

_PREFIX = "agent."


def _flatten(section: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in section.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flatten(value, f"{name}.")
        else:
            yield name, value


def _from_config_yaml(text: str, source: Path) -> dict[str, Any]:
    document = yaml.safe_load(text) or {}
    if not isinstance(document, Mapping):
        raise ValueError(f"{source}: not a YAML mapping")
    options: dict[str, Any] = {}
    for key, value in _flatten(document):
        if key.startswith(_PREFIX):
            options[key.removeprefix(_PREFIX)] = value
    return options


def _from_legacy_conf(text: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or ":" not in line:
            continue
        key, _, value = line.partition(":")
        key = key.strip()
        if key.startswith(_PREFIX):
            options[key.removeprefix(_PREFIX)] = value.strip()
    return options


def read_agent_options(conf_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The agent options in a Flink configuration directory (keys without `agent.`):
    from `config.yaml`, else from the legacy `flink-conf.yaml`; empty when neither exists."""
    directory = Path(conf_dir)
    current = directory / "config.yaml"
    if current.is_file():
        return _from_config_yaml(current.read_text(encoding="utf-8"), current)
    legacy = directory / "flink-conf.yaml"
    if legacy.is_file():
        return _from_legacy_conf(legacy.read_text(encoding="utf-8"))
    return {}


def agent_options_from_conf_dir(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`read_agent_options` of `$FLINK_CONF_DIR` (empty when it is not set)."""
    conf_dir = (os.environ if environ is None else environ).get("FLINK_CONF_DIR")
    if not conf_dir:
        return {}
    options = read_agent_options(conf_dir)
    if options:
        _LOG.info("agent options from %s: %s", conf_dir, sorted(options))
    return options
