"""`AgentsExecutionEnvironment`: where an agent runs (upstream's module and entry points).

>>> env = AgentsExecutionEnvironment.get_execution_environment()  # local, no Flink
>>> out = env.from_list([{"key": "t1", "value": "..."}]).apply(MyAgent()).to_list()
>>> env.execute()

With a PyFlink ``StreamExecutionEnvironment`` the same agent runs as a keyed
operator in a Flink job, as upstream:

>>> agents_env = AgentsExecutionEnvironment.get_execution_environment(stream_env)
>>> out = agents_env.from_datastream(ds, key_selector=lambda r: r.id).apply(MyAgent())
>>> out.to_datastream().print()                   # or .to_table(schema, output_type)
>>> agents_env.execute("my job")

``get_config(path)`` reads the ``agent:`` section of a YAML file into the options;
``load_yaml(paths)`` registers the agents a YAML agent file declares, which ``apply``
then takes by name (`flink_agents.api.yaml`).
Nothing here imports pyflink: the environments are loaded when asked for.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flink_agents.api.configuration import agent_section
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.resource import Resource, ResourceDescriptor, ResourceType

if TYPE_CHECKING:
    from flink_agents.api.agents.agent import Agent

__all__ = ["AgentBuilder", "AgentsExecutionEnvironment"]

_LOCAL_ENVIRONMENT = "flink_agents.runtime.local_runner"
_FLINK_ENVIRONMENT = "flink_agents.runtime.flink.environment"


class AgentBuilder(ABC):
    """Connects an input to an agent and gives its output."""

    @abstractmethod
    def apply(self, agent: Agent | str) -> AgentBuilder:
        """The agent that processes the input: an `Agent`, or the name of one the
        environment has (`AgentsExecutionEnvironment.load_yaml`)."""

    def to_list(self) -> list[dict[Any, Any]]:
        """The outputs as a list (local environment), filled by ``env.execute()``."""
        raise NotImplementedError(f"{type(self).__name__} does not produce a list")

    def to_datastream(self, output_type: Any = None) -> Any:
        """The outputs as a PyFlink DataStream (Flink environment), of ``output_type``
        (a PyFlink ``TypeInformation``) when given, else of pickled Python objects."""
        raise NotImplementedError(f"{type(self).__name__} does not produce a DataStream")

    def to_table(self, schema: Any, output_type: Any = None) -> Any:
        """The outputs as a PyFlink Table (Flink environment): upstream's
        ``to_table(schema, output_type)`` (a ``Schema`` and a ``RowTypeInfo``), or
        ``to_table(row_type_info)``."""
        raise NotImplementedError(f"{type(self).__name__} does not produce a Table")

    def to_error_list(self) -> list[dict[str, Any]]:
        """Failure records of inputs skipped under ``input-failure.policy: skip`` (local
        environment), filled by ``env.execute()``."""
        raise NotImplementedError(f"{type(self).__name__} does not produce an error list")

    def to_error_datastream(self) -> Any:
        """Failure records of inputs skipped under ``input-failure.policy: skip``, as a
        PyFlink DataStream (Flink environment)."""
        raise NotImplementedError(f"{type(self).__name__} does not produce a DataStream")


class AgentsExecutionEnvironment(ABC):
    """Base of the local and the Flink environments: configuration, shared resources,
    inputs and execution."""

    def __init__(self) -> None:
        self._config = AgentConfiguration()
        self._resources: dict[ResourceType, dict[str, Any]] = {t: {} for t in ResourceType}
        self._agents: dict[str, Agent] = {}

    @staticmethod
    def get_execution_environment(
        env: Any = None, t_env: Any = None, **kwargs: Any
    ) -> AgentsExecutionEnvironment:
        """The local environment when ``env`` is None; with a PyFlink
        ``StreamExecutionEnvironment`` (and optionally a ``StreamTableEnvironment``),
        the Flink environment."""
        if env is None:
            if t_env is not None:
                raise ValueError("a table environment needs its StreamExecutionEnvironment")
            module = importlib.import_module(_LOCAL_ENVIRONMENT)
            return module.LocalExecutionEnvironment(**kwargs)
        module = importlib.import_module(_FLINK_ENVIRONMENT)
        if kwargs:
            return module.FlinkAgentsExecutionEnvironment(env, t_env, **kwargs)
        return module.FlinkAgentsExecutionEnvironment(env, t_env)

    # ------------------------------------------------------------------ configuration

    def _state(self) -> None:
        # Subclasses that skip __init__ still get a configuration and resources.
        if not hasattr(self, "_config"):
            self._config = AgentConfiguration()
        if not hasattr(self, "_resources"):
            self._resources = {t: {} for t in ResourceType}
        if not hasattr(self, "_agents"):
            self._agents = {}

    def get_config(self, path: str | None = None) -> AgentConfiguration:
        """The options every agent of this environment runs with; with ``path``, first
        read the options in the ``agent:`` section of that YAML file into them (as in
        Flink's ``config.yaml``: nested or dotted keys)."""
        self._state()
        if path is not None:
            for key, value in agent_section(path).items():
                try:
                    self._config.set_str(key, value)
                except ValueError as exc:
                    raise ValueError(f"agent option {key!r} in {path}: {exc}") from exc
        return self._config

    @property
    def resources(self) -> dict[ResourceType, dict[str, Any]]:
        """Resources shared by the agents of this environment, by type and name."""
        self._state()
        return self._resources

    def add_resource(
        self, name: str, resource_type: ResourceType, instance: ResourceDescriptor | Resource | Any
    ) -> AgentsExecutionEnvironment:
        """Share a resource with every agent (an agent's own resource of the same name wins)."""
        self._state()
        if name in self._resources[resource_type]:
            raise ValueError(f"{resource_type.value} {name!r} is already defined")
        self._resources[resource_type][name] = instance
        return self

    # ------------------------------------------------------------------ inputs

    def from_list(self, inputs: list[dict[str, Any]]) -> AgentBuilder:
        """Inputs as ``{"key": ..., "value": ...}`` dicts (local environment)."""
        raise NotImplementedError(f"{type(self).__name__} does not read lists")

    def from_datastream(self, input: Any, key_selector: Any = None) -> AgentBuilder:
        """A PyFlink DataStream as input (Flink environment); ``key_selector`` (a
        function or a ``KeySelector``) gives each record's key."""
        raise NotImplementedError(f"{type(self).__name__} does not read DataStreams")

    def from_table(self, input: Any, key_selector: Any = None) -> AgentBuilder:
        """A PyFlink Table as input (Flink environment): each row becomes a dict of its
        fields; ``key_selector`` receives the row (a ``Row``: by position or by name)."""
        raise NotImplementedError(f"{type(self).__name__} does not read Tables")

    def load_yaml(self, paths: Path | str | Sequence[Path | str]) -> None:
        """Register the agents and shared resources of one or more YAML agent files
        (`flink_agents.api.yaml.loader`); ``apply("name")`` then runs an agent of them.
        Calls add up; `YamlDefinitionError` names the file, line and field of a problem."""
        from flink_agents.api.yaml.loader import load_yaml

        self._state()
        load_yaml(self, paths)

    def resolve_agent(self, agent: Agent | str) -> Agent:
        """``agent`` itself, or the agent of that name (`load_yaml`); `ValueError` naming
        the known ones when there is none, `YamlDefinitionError` when a chat or embedding
        model setup of its YAML names a resource neither it nor the environment has."""
        if not isinstance(agent, str):
            return agent
        self._state()
        found = self._agents.get(agent)
        if found is None:
            raise ValueError(
                f"no agent named {agent!r} in this environment (known: {sorted(self._agents)}); "
                "load_yaml(...) registers the agents of a YAML file"
            )
        from flink_agents.api.yaml.loader import check_references

        check_references(self, agent)
        return found

    @abstractmethod
    def execute(self, job_name: str | None = None) -> Any:
        """Run what was built."""
