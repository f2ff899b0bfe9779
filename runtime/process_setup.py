"""What a runner does to its Python process when it starts, before it reads any state.

Both runners call `set_up_process` with the agent's configuration: the local runner when
it is made, the Flink operator in its ``open`` (in the worker, through
`flink_agents.runtime.flink.engine_factory.AgentEngineFactory`). It

- registers the provider key variables of the environment with the redactor
  (`flink_agents.api.redaction.register_provider_env_secrets`), so a key is masked in
  logs, errors and the event log even when no provider connection is built;
- allows the module prefixes of ``stored-classes.allowed-modules`` to be imported when
  stored data names their classes (`flink_agents.api._class_path.find_stored_class`).

Both are process-wide and only ever add: one worker interpreter may run several jobs.
"""

from __future__ import annotations

from flink_agents.api._class_path import allow_stored_class_modules
from flink_agents.api.core_options import AgentConfigOptions, AgentConfiguration
from flink_agents.api.redaction import register_provider_env_secrets

__all__ = ["set_up_process"]


def set_up_process(config: AgentConfiguration) -> None:
    """Register the environment's provider keys and allow ``config``'s stored-class
    modules (see the module doc)."""
    register_provider_env_secrets()
    allow_stored_class_modules(config.get(AgentConfigOptions.STORED_CLASSES_ALLOWED_MODULES))
