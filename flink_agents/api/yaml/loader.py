"""Agents defined in YAML files (upstream's `flink_agents.api.yaml.loader`).

>>> env.load_yaml(["agents.yaml", "shared.yaml"])      # or load_yaml(env, paths)
>>> env.from_list(inputs).apply("review_analysis_agent")

A file declares agents (``agents:``, each with its resources and actions) and, beside
them, shared resources and actions: shared resources are the environment's (every agent
may use them, whichever file declared them), a shared action is added to each agent that
names it in its ``actions:`` list. The format is `specs`; short names are `aliases`.

`build_agents(path)` builds what one file declares; `load_yaml(env, paths)` also
registers it on the environment and checks, file by file, that it can run here: the
resource types and classes exist (embedding models, vector stores, skills and Java
implementations only once they do), descriptor arguments are options of their class,
action functions import and their triggers are event types. Every problem raises
`YamlDefinitionError` (a `ValueError`) naming the file, the line and the field; a file
that fails leaves the environment as the files before it left it.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from flink_agents.api.agents.agent import Agent
from flink_agents.api.errors import (
    ResourceUnavailableError,
    UnknownOptionError,
    YamlDefinitionError,
)
from flink_agents.api.events.event_type import classify_triggers
from flink_agents.api.function import (
    ACTION_PARAMETER_TYPES,
    Function,
    JavaFunction,
    PythonFunction,
)
from flink_agents.api.message import ChatMessage
from flink_agents.api.message import MessageRole as ChatRole
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.api.yaml._source import FieldPath, YamlSource, read_source
from flink_agents.api.yaml.aliases import JAVA_WRAPPER_CLAZZ, resolve_clazz, resolve_event_type
from flink_agents.api.yaml.specs import (
    ActionSpec,
    AgentSpec,
    DescriptorSpec,
    Language,
    PromptSpec,
    SkillsSpec,
    ToolSpec,
    YamlAgentsDocument,
)
from flink_agents.plan.trigger_condition import TriggerCondition

if TYPE_CHECKING:
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

__all__ = ["build_agents", "check_references", "load_yaml", "resolve_function"]

_DESCRIPTOR_TYPES: dict[str, ResourceType] = {
    "chat_model_connections": ResourceType.CHAT_MODEL_CONNECTION,
    "chat_model_setups": ResourceType.CHAT_MODEL,
    "embedding_model_connections": ResourceType.EMBEDDING_MODEL_CONNECTION,
    "embedding_model_setups": ResourceType.EMBEDDING_MODEL,
    "vector_stores": ResourceType.VECTOR_STORE,
    "mcp_servers": ResourceType.MCP_SERVER,
}
"""Section of descriptor resources -> their resource type."""

_SECTION_OF: dict[ResourceType, str] = {
    **{t: s for s, t in _DESCRIPTOR_TYPES.items()},
    ResourceType.TOOL: "tools",
    ResourceType.PROMPT: "prompts",
    ResourceType.SKILLS: "skills",
}

_SHARED_WORD: dict[ResourceType, str] = {
    ResourceType.TOOL: "tool",
    ResourceType.PROMPT: "prompt",
    ResourceType.SKILLS: "skills",
}
"""How upstream's duplicate messages name a shared resource ("resource" otherwise)."""

_FORM = (
    "must be of the form '<module-or-class>:<qualname>' (e.g. 'pkg.tools:add', "
    "'pkg.tools:MyTools.add', 'com.example.MyClass:method')"
)


def resolve_function(
    *,
    name: str,
    function: str | None,
    language: Language | None = None,
    parameter_types: list[str] | None = None,
) -> PythonFunction | JavaFunction:
    """The function ``function`` (``<module>:<qualname>``, or for Java
    ``<class>:<method>``) names, for the action or tool ``name``. Nothing is imported
    (`PythonFunction.as_callable` does that). `ValueError` when it is missing or not of
    that form."""
    if function is None:
        raise ValueError(
            f"Action/tool {name!r}: 'function' is required and must be of the form "
            "'<module-or-class>:<qualname>'."
        )
    parts = function.split(":")
    if len(parts) != 2 or not all(parts):
        kind = "java" if language == "java" else "python"
        raise ValueError(f"Action/tool {name!r}: {kind} function {function!r} {_FORM}.")
    left, right = parts
    if language == "java":
        return JavaFunction(qualname=left, method_name=right, parameter_types=parameter_types or [])
    return PythonFunction(module=left, qualname=right)


def _build_descriptor(spec: DescriptorSpec, resource_type: ResourceType) -> ResourceDescriptor:
    arguments = dict(spec.model_extra or {})
    if spec.type == "java":
        wrapper = JAVA_WRAPPER_CLAZZ.get(resource_type)
        if wrapper is None:
            raise ValueError(
                f"Resource {spec.name!r}: type 'java' is not supported for "
                f"{resource_type.value} resources (upstream has no Java wrapper for them)"
            )
        java_class = resolve_clazz(spec.clazz, resource_type, "java")
        return ResourceDescriptor(clazz=wrapper, java_clazz=java_class, **arguments)
    return ResourceDescriptor(clazz=resolve_clazz(spec.clazz, resource_type), **arguments)


def _action_function(action: ActionSpec) -> Function:
    return resolve_function(
        name=action.name,
        function=action.function,
        language=action.type,
        parameter_types=list(ACTION_PARAMETER_TYPES) if action.type == "java" else None,
    )


def _add_action(agent: Agent, action: ActionSpec) -> None:
    triggers = [resolve_event_type(t) for t in action.trigger_conditions]
    agent.add_action(action.name, triggers, _action_function(action), **(action.config or {}))


def _build_tool(spec: ToolSpec) -> FunctionTool:
    """A function tool named ``spec.name``, its ``func`` the function's descriptor (the
    function is imported: its signature and docstring are what the model sees)."""
    if spec.type == "java" and spec.parameter_types is None:
        raise ValueError(f"Tool {spec.name!r}: java tools must declare 'parameter_types'.")
    if spec.type != "java" and spec.parameter_types is not None:
        raise ValueError(f"Tool {spec.name!r}: 'parameter_types' is only valid for Java tools.")
    func = resolve_function(
        name=spec.name,
        function=spec.function,
        language=spec.type,
        parameter_types=spec.parameter_types,
    )
    tool = FunctionTool.from_function(
        func.as_callable(), name=spec.name, injected_args=spec.injected_args
    )
    return tool.model_copy(update={"func": func})  # upstream's form: the descriptor


def _build_prompt(spec: PromptSpec) -> Prompt:
    if spec.text:
        return Prompt.from_text(spec.text)
    return Prompt.from_messages(
        [ChatMessage(role=ChatRole(m.role.value), content=m.content) for m in spec.messages or []]
    )


def _build_skills(spec: SkillsSpec) -> Any:
    """Upstream's ``Skills`` of the spec's sources, in the order paths, urls, classpath,
    package (`flink_agents.api.skills`; `ImportError` saying so while it is not here)."""
    skills = importlib.import_module("flink_agents.api.skills")
    source = skills.SkillSourceSpec
    sources = [source(scheme="local", params={"path": p}) for p in spec.paths]
    sources += [source(scheme="url", params={"url": u}) for u in spec.urls]
    sources += [source(scheme="classpath", params={"resource": r}) for r in spec.classpath]
    sources += [
        source(scheme="package", params={"package": p.package, "resource": p.resource})
        for p in spec.package
    ]
    return skills.Skills(sources=sources)


def _build(resource_type: ResourceType, spec: Any) -> Any:
    if resource_type is ResourceType.TOOL:
        return _build_tool(spec)
    if resource_type is ResourceType.PROMPT:
        return _build_prompt(spec)
    if resource_type is ResourceType.SKILLS:
        return _build_skills(spec)
    return _build_descriptor(spec, resource_type)


def _sections(owner: AgentSpec | YamlAgentsDocument) -> list[tuple[ResourceType, str, list[Any]]]:
    """``(type, section, specs)`` of each resource section, in build order."""
    return [
        *[(t, s, getattr(owner, s)) for s, t in _DESCRIPTOR_TYPES.items()],
        (ResourceType.TOOL, "tools", owner.tools),
        (ResourceType.PROMPT, "prompts", owner.prompts),
        (ResourceType.SKILLS, "skills", owner.skills),
    ]


@dataclass
class _File:
    """What one file declares, built, with where each thing is written."""

    source: YamlSource
    doc: YamlAgentsDocument
    agents: dict[str, Agent] = field(default_factory=dict)
    agent_specs: dict[str, AgentSpec] = field(default_factory=dict)
    agent_paths: dict[str, FieldPath] = field(default_factory=dict)
    shared_resources: dict[ResourceType, dict[str, Any]] = field(
        default_factory=lambda: {t: {} for t in ResourceType}
    )
    shared_paths: dict[tuple[ResourceType, str], FieldPath] = field(default_factory=dict)
    shared_actions: dict[str, ActionSpec] = field(default_factory=dict)
    shared_action_paths: dict[str, FieldPath] = field(default_factory=dict)


def _read(path: Path | str) -> _File:
    data, source = read_source(path)
    if not isinstance(data, Mapping):
        raise source.error((), f"a YAML agent file is a mapping, not a {type(data).__name__}")
    _check_injected_args(data, source)
    try:
        doc = YamlAgentsDocument.model_validate(data)
    except ValidationError as exc:
        raise source.validation_error(exc) from None
    return _File(source, doc)


def _check_injected_args(data: Mapping[str, Any], source: YamlSource) -> None:
    """The tools' ``injected_args`` one by one: a wrong one raises a `TypeError` that
    pydantic does not place, so it is placed here."""
    owners: list[tuple[FieldPath, Any]] = [((), data)]
    agents = data.get("agents")
    if isinstance(agents, list):
        owners += [(("agents", i), a) for i, a in enumerate(agents)]
    for path, owner in owners:
        tools = owner.get("tools") if isinstance(owner, Mapping) else None
        for i, tool in enumerate(tools if isinstance(tools, list) else []):
            if isinstance(tool, Mapping) and "injected_args" in tool:
                with (
                    source.at(*path, "tools", i, "injected_args"),
                    contextlib.suppress(ValidationError),  # placed with the others
                ):
                    ToolSpec.model_validate(tool)


def _build_agent(spec: AgentSpec, source: YamlSource, path: FieldPath) -> Agent:
    agent = Agent()
    for resource_type, section, specs in _sections(spec):
        for i, item in enumerate(specs):
            with source.at(*path, section, i):
                agent.add_resource(item.name, resource_type, _build(resource_type, item))
    for i, action in enumerate(spec.actions):
        if isinstance(action, ActionSpec):  # a name (shared action) is added by load_yaml
            with source.at(*path, "actions", i):
                _add_action(agent, action)
    return agent


def _build_in_file_state(path: Path | str) -> _File:
    """Parse and build one file, refusing names it declares twice."""
    file = _read(path)
    source, doc = file.source, file.doc
    for i, spec in enumerate(doc.agents):
        where = ("agents", i)
        if spec.name in file.agents:
            raise source.error((*where, "name"), f"Duplicate agent name {spec.name!r} in {path}")
        file.agents[spec.name] = _build_agent(spec, source, where)
        file.agent_specs[spec.name] = spec
        file.agent_paths[spec.name] = where
    for resource_type, section, specs in _sections(doc):
        word = _SHARED_WORD.get(resource_type, "resource")
        for i, item in enumerate(specs):
            where = (section, i)
            if item.name in file.shared_resources[resource_type]:
                raise source.error(
                    (*where, "name"), f"Duplicate shared {word} name {item.name!r} in {path}"
                )
            with source.at(*where):
                file.shared_resources[resource_type][item.name] = _build(resource_type, item)
            file.shared_paths[(resource_type, item.name)] = where
    for i, action in enumerate(doc.actions):
        if action.name in file.shared_actions:
            raise source.error(
                ("actions", i, "name"), f"Duplicate shared action name {action.name!r} in {path}"
            )
        file.shared_actions[action.name] = action
        file.shared_action_paths[action.name] = ("actions", i)
    return file


def build_agents(
    path: Path | str,
) -> tuple[dict[str, Agent], dict[ResourceType, dict[str, Any]], dict[str, ActionSpec]]:
    """The agents one file declares (by name), its shared resources (by type and name)
    and its shared actions (by name). An agent's references to shared actions are left
    out (`load_yaml` adds them); nothing is checked against an environment."""
    file = _build_in_file_state(path)
    return file.agents, file.shared_resources, file.shared_actions


def _add_shared_actions(file: _File) -> None:
    for agent_name, agent in file.agents.items():
        base = file.agent_paths[agent_name]
        for i, item in enumerate(file.agent_specs[agent_name].actions):
            if not isinstance(item, str):
                continue
            shared = file.shared_actions.get(item)
            if shared is None:
                raise file.source.error(
                    (*base, "actions", i),
                    f"Agent {agent_name!r} references shared action {item!r} in "
                    f"{file.source.file}, but no shared action with that name is defined at "
                    f"the file level (known: {sorted(file.shared_actions)})",
                )
            with file.source.at(*base, "actions", i):
                _add_action(agent, shared)


def _check_not_in(env: AgentsExecutionEnvironment, file: _File) -> None:
    for name, where in file.agent_paths.items():
        if name in env._agents:
            raise file.source.error(
                (*where, "name"), f"Duplicate agent name {name!r} (loading {file.source.file})"
            )
    for (resource_type, name), where in file.shared_paths.items():
        if name in env.resources[resource_type]:
            raise file.source.error(
                (*where, "name"),
                f"Duplicate shared {resource_type.value} {name!r} (loading {file.source.file}): "
                "the environment has one of that name already",
            )


def _check_resource(
    source: YamlSource, where: FieldPath, resource_type: ResourceType, value: Any
) -> None:
    """Whether the resource can be built here: for a descriptor its class and options
    (a class whose module does not import here is checked when it is built, as the plan
    does)."""
    if isinstance(value, ResourceDescriptor):
        try:
            value.check()
        except ImportError:
            return
        except UnknownOptionError as exc:
            raise source.error(where, str(exc)) from exc
        except (ResourceUnavailableError, TypeError) as exc:
            raise source.error((*where, "clazz"), str(exc)) from exc


def _check_action(source: YamlSource, where: FieldPath, agent: Agent, name: str) -> None:
    triggers, function, _ = agent.actions[name]
    with source.at(*where, "function"):
        function.as_callable()
    with source.at(*where, "trigger_conditions"):
        for expression in classify_triggers(triggers, owner=f"action {name!r}").expressions:
            TriggerCondition(expression, name)  # refused here, at its line, not at run time


def _check_runnable(file: _File) -> None:
    """Everything the file declares can run here (see the module doc)."""
    source = file.source
    for name, where in file.shared_action_paths.items():
        with source.at(*where, "function"):
            _action_function(file.shared_actions[name]).as_callable()
    for (resource_type, name), where in file.shared_paths.items():
        _check_resource(source, where, resource_type, file.shared_resources[resource_type][name])
    for agent_name, agent in file.agents.items():
        base = file.agent_paths[agent_name]
        spec = file.agent_specs[agent_name]
        for resource_type, section, specs in _sections(spec):
            for i, item in enumerate(specs):
                value = agent.resources[resource_type][item.name]
                _check_resource(source, (*base, section, i), resource_type, value)
        for i, item in enumerate(spec.actions):
            if isinstance(item, str):
                where = file.shared_action_paths[item]
                name = item
            else:
                where = (*base, "actions", i)
                name = item.name
            _check_action(source, where, agent, name)


_REFERENCES: dict[ResourceType, tuple[tuple[str, ResourceType], ...]] = {
    ResourceType.CHAT_MODEL: (
        ("connection", ResourceType.CHAT_MODEL_CONNECTION),
        ("prompt", ResourceType.PROMPT),
        ("tools", ResourceType.TOOL),
    ),
    ResourceType.EMBEDDING_MODEL: (("connection", ResourceType.EMBEDDING_MODEL_CONNECTION),),
}
"""The arguments of a setup that name other resources, and their type."""


@dataclass(frozen=True)
class _Reference:
    """A setup's argument that names another resource: where it is written, and what."""

    where: tuple[str, int, str]
    """File, line and field."""
    setup: tuple[ResourceType, str]
    """The setup that refers: its type and name."""
    resource_type: ResourceType
    name: str


def _references(file: _File) -> dict[str | None, list[_Reference]]:
    """The names the file's setups refer to: per agent for its own setups, under None
    for the shared ones."""
    found: dict[str | None, list[_Reference]] = {}
    owners: list[tuple[str | None, FieldPath, AgentSpec | YamlAgentsDocument]] = [
        (None, (), file.doc),
        *[(name, file.agent_paths[name], spec) for name, spec in file.agent_specs.items()],
    ]
    for owner, base, spec in owners:
        for resource_type, section, specs in _sections(spec):
            for i, item in enumerate(specs):
                for key, target in _REFERENCES.get(resource_type, ()):
                    value = (item.model_extra or {}).get(key)
                    items = enumerate(value) if isinstance(value, list) else [(None, value)]
                    for j, name in items:
                        if not isinstance(name, str):
                            continue  # a Prompt written out, or a mistake the class reports
                        path = (*base, section, i, key, *([] if j is None else [j]))
                        file_name, line, field_name, _ = file.source.problem(path, "")
                        found.setdefault(owner, []).append(
                            _Reference(
                                (file_name, line, field_name),
                                (resource_type, item.name),
                                target,
                                name,
                            )
                        )
    return found


def check_references(env: AgentsExecutionEnvironment, agent_name: str) -> None:
    """`YamlDefinitionError` when a setup the YAML agent ``agent_name`` may use (its own
    or a shared one) names a connection, prompt or tool that neither the agent nor the
    environment has. `AgentsExecutionEnvironment.resolve_agent` checks this when an
    agent is applied by name (every file loaded by then). Tools and prompts are not
    checked when there are MCP servers, which may offer them."""
    registry: dict[str | None, list[_Reference]] = vars(env).get("_yaml_references", {})
    agent = env._agents.get(agent_name)
    if agent is None or agent_name not in registry:
        return
    own, shared = agent.resources, env.resources
    has_mcp = bool(own[ResourceType.MCP_SERVER] or shared[ResourceType.MCP_SERVER])
    problems: list[tuple[str, int, str, str]] = []
    shared_used = [
        r for r in registry.get(None, ()) if r.setup[1] not in own[r.setup[0]]
    ]  # an agent's own setup of a shared one's name is the one it uses
    for reference in [*registry[agent_name], *shared_used]:
        kind = reference.resource_type
        if has_mcp and kind in (ResourceType.TOOL, ResourceType.PROMPT):
            continue
        if reference.name in own[kind] or reference.name in shared[kind]:
            continue
        known = sorted({*own[kind], *shared[kind]})
        problems.append(
            (
                *reference.where,
                f"agent {agent_name!r} has no {kind.value} named {reference.name!r}, nor has "
                f"the environment (known: {known})",
            )
        )
    if problems:
        raise YamlDefinitionError(problems)


def load_yaml(env: AgentsExecutionEnvironment, paths: Path | str | Sequence[Path | str]) -> None:
    """Register on ``env`` the agents and shared resources of each file, in order.

    Calls add up: an agent or a shared resource whose name the environment (or the same
    file) has already raises `YamlDefinitionError`, as does anything in a file that
    cannot run here (see the module doc); the files before it stay loaded."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    for path in paths:
        file = _build_in_file_state(path)
        _check_not_in(env, file)
        _add_shared_actions(file)
        _check_runnable(file)
        for resource_type, by_name in file.shared_resources.items():
            for name, resource in by_name.items():
                env.add_resource(name, resource_type, resource)
        env._agents.update(file.agents)
        registry = vars(env).setdefault("_yaml_references", {})
        for agent_name in file.agents:
            registry.setdefault(agent_name, [])
        for owner, references in _references(file).items():
            registry.setdefault(owner, []).extend(references)
