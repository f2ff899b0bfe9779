"""Flink's configuration directory (`$FLINK_CONF_DIR`), as a Flink job reads it.

Agent options: `$FLINK_CONF_DIR/config.yaml` (Flink 2) holds them under a top-level
`agent:` section, nested or as dotted keys; the legacy `flink-conf.yaml` (flat `key: value`
lines) as keys prefixed with `agent.`. Options set in code on the agents environment take
precedence: the file is read when the environment is created, before any
`get_config().set(...)`.

Flink's own settings: a `config.yaml` in `$FLINK_CONF_DIR` replaces Flink's packaged one
(`pyflink/conf/config.yaml`) as a whole. One with only an `agent:` section lacks the JVM
options Flink needs on Java 17+ (`env.java.opts.all`: `--add-opens ...`), and every job
would fail with Java's `InaccessibleObjectException`. So before PyFlink's JVM starts,
`complete_flink_conf_dir` points `FLINK_CONF_DIR` at a copy with Flink's packaged settings
under the folder's own (`merged_conf_dir`); a JVM already started without those options is
refused with what to do (`missing_module_opens`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import tempfile
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from flink_agents.api.configuration import agent_options_in, read_yaml_settings

__all__ = [
    "JVM_OPTIONS_KEYS",
    "agent_options_from_conf_dir",
    "complete_flink_conf_dir",
    "lacks_flink_defaults",
    "merged_conf_dir",
    "missing_module_opens",
    "packaged_conf_dir",
    "read_agent_options",
    "read_flink_settings",
]

_LOG = logging.getLogger(__name__)

JVM_OPTIONS_KEYS = ("env.java.opts.all", "env.java.opts")
"""Where a Flink configuration holds the JVM options (the packaged one: `--add-opens ...`)."""

_REQUIRED_OPEN = "java.base/java.lang=ALL-UNNAMED"
"""One of the module opens Flink's packaged JVM options hold (its serializers need it)."""


def read_agent_options(conf_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The agent options in a Flink configuration directory (keys without `agent.`):
    from `config.yaml`, else from the legacy `flink-conf.yaml`; empty when neither exists.
    For `config.yaml` the same as `agent_section` of it."""
    return agent_options_in(read_flink_settings(conf_dir))


def agent_options_from_conf_dir(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`read_agent_options` of `$FLINK_CONF_DIR` (empty when it is not set)."""
    conf_dir = (os.environ if environ is None else environ).get("FLINK_CONF_DIR")
    if not conf_dir:
        return {}
    options = read_agent_options(conf_dir)
    if options:
        _LOG.info("agent options from %s: %s", conf_dir, sorted(options))
    return options


# ------------------------------------------------------------------ Flink's own settings


def _legacy_settings(text: str) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or ":" not in line:
            continue
        key, _, value = line.partition(":")
        settings[key.strip()] = value.strip()
    return settings


def read_flink_settings(conf_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Every setting in a Flink configuration directory, as dotted keys: from `config.yaml`,
    else from the legacy `flink-conf.yaml`; empty when neither exists."""
    directory = Path(conf_dir)
    current = directory / "config.yaml"
    if current.is_file():
        return read_yaml_settings(current)
    legacy = directory / "flink-conf.yaml"
    if legacy.is_file():
        return _legacy_settings(legacy.read_text(encoding="utf-8"))
    return {}


def packaged_conf_dir() -> Path:
    """`pyflink/conf` of the installed apache-flink package (Flink's defaults)."""
    spec = importlib.util.find_spec("pyflink")
    if spec is None or spec.origin is None:
        raise RuntimeError("apache-flink is not installed in this interpreter")
    return Path(spec.origin).parent / "conf"


def lacks_flink_defaults(conf_dir: str | os.PathLike[str]) -> bool:
    """Whether the folder's configuration has no JVM options (`env.java.opts.all`): it was
    written from scratch (only an `agent:` section, say), not from Flink's packaged one."""
    settings = read_flink_settings(conf_dir)
    return not any(key in settings for key in JVM_OPTIONS_KEYS)


def merged_conf_dir(
    conf_dir: str | os.PathLike[str],
    *,
    defaults: str | os.PathLike[str] | None = None,
    parent: str | os.PathLike[str] | None = None,
) -> Path:
    """A configuration folder with Flink's packaged settings (``defaults``: `pyflink/conf`)
    under those of ``conf_dir``, which win key by key; its other files (log4j properties,
    masters, workers...) replace the packaged ones. Written once under ``parent`` (the
    temporary folder), named after its content."""
    source = Path(conf_dir)
    packaged = Path(defaults) if defaults is not None else packaged_conf_dir()
    settings = {**read_flink_settings(packaged), **read_flink_settings(source)}
    text = (
        f"# Flink's packaged settings ({packaged}) under those of {source.resolve()},\n"
        "# written by flink-agents because that folder's config.yaml has no JVM options.\n"
        + yaml.safe_dump(settings, default_flow_style=False, sort_keys=False, width=1_000_000)
    )
    files: dict[str, bytes] = {}
    for folder in (packaged, source):
        for item in sorted(folder.iterdir()):
            if item.is_file() and item.name not in ("config.yaml", "flink-conf.yaml"):
                files[item.name] = item.read_bytes()
    digest = hashlib.sha256(text.encode("utf-8"))
    for name, content in sorted(files.items()):
        digest.update(name.encode("utf-8") + b"\0" + content)
    root = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    target = root / f"flink-agents-conf-{digest.hexdigest()[:16]}"
    target.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (target / name).write_bytes(content)
    (target / "config.yaml").write_text(text, encoding="utf-8")
    return target


def complete_flink_conf_dir(environ: MutableMapping[str, str] | None = None) -> Path | None:
    """When `FLINK_CONF_DIR` names a folder whose configuration lacks Flink's defaults,
    point it at `merged_conf_dir` of it and return that; else None. Call before PyFlink's
    JVM starts (it reads the folder then)."""
    env = os.environ if environ is None else environ
    conf_dir = env.get("FLINK_CONF_DIR")
    if not conf_dir or not Path(conf_dir).is_dir() or not lacks_flink_defaults(conf_dir):
        return None
    merged = merged_conf_dir(conf_dir)
    env["FLINK_CONF_DIR"] = str(merged)
    _LOG.info(
        "FLINK_CONF_DIR %s has no JVM options (env.java.opts.all): using %s, Flink's "
        "packaged settings with that folder's settings over them",
        conf_dir,
        merged,
    )
    return merged


def missing_module_opens(jvm_arguments: Sequence[str], java_major: int) -> bool:
    """Whether a JVM started with ``jvm_arguments`` lacks the module opens Flink's
    serializers need (Java 17 and later refuse their reflection without them)."""
    if java_major < 17:
        return False
    return not any(_REQUIRED_OPEN in argument for argument in jvm_arguments)
