"""Which pipeline a store's records belong to, and the errors about sharing a table.

Every record carries the id of the pipeline (the agent job or runner) that made it, and a
store opened for pipeline P reads, replaces, drops and prunes P's records only: two jobs
sharing a table never see each other's records. A store also refuses, when it opens, a
table that holds another pipeline's records, unless it was told the table is shared
(``durable-execution.store.shared``): sharing by accident usually means a copied
configuration.

The id comes from the agent option ``durable-execution.pipeline-id``. Unset, it is the agent
class's ``module:qualname`` (plus ``/<operator name>`` when the Flink operator's name is
given), which stays the same across restarts and restores from a savepoint as long as the
class keeps its name. Agents built as a plain ``Agent()`` with ``add_action`` all share the
class name, so set the option for them, and in production in general.
"""

from __future__ import annotations

from typing import Any

from flink_agents.api.core_options import AgentConfigOptions, AgentConfiguration
from flink_agents.runtime.errors import DurableStoreError

__all__ = [
    "DEFAULT_PIPELINE",
    "check_pipeline_id",
    "default_pipeline_id",
    "foreign_pipeline_error",
    "pipeline_id_from",
    "unscoped_table_error",
]

DEFAULT_PIPELINE = "default"
"""The pipeline of a store built without one (and of an unnamed pipeline with no agent)."""


def check_pipeline_id(pipeline: str) -> str:
    """``pipeline`` if it is a usable id (a non-blank string), else :class:`ValueError`."""
    if not isinstance(pipeline, str) or not pipeline.strip():
        raise ValueError(f"a pipeline id is a non-blank string, not {pipeline!r}")
    return pipeline


def default_pipeline_id(agent: Any, operator_name: str | None = None) -> str:
    """``module:qualname`` of the agent's class, plus ``/<operator_name>`` when given."""
    kind = type(agent)
    identity = f"{kind.__module__}:{kind.__qualname__}"
    return f"{identity}/{operator_name}" if operator_name else identity


def pipeline_id_from(
    config: AgentConfiguration, agent: Any = None, operator_name: str | None = None
) -> str:
    """The pipeline id the options name, else the agent's default, else ``default``."""
    configured = config.get(AgentConfigOptions.DURABLE_EXECUTION_PIPELINE_ID)
    if configured:
        return check_pipeline_id(configured)
    if agent is None:
        return DEFAULT_PIPELINE
    return default_pipeline_id(agent, operator_name)


def foreign_pipeline_error(
    store: str,
    table: str,
    mine: str,
    other: str,
    *,
    container: str = "table",
    own_option: str = "durable-execution.store.table",
) -> DurableStoreError:
    """The refusal of a table (or topic: ``container``, named by ``own_option``) that holds
    records of another pipeline."""
    return DurableStoreError(
        f"{store}: {container} {table} holds durable-call records of pipeline {other!r}, and "
        f"this store was opened for pipeline {mine!r}. Pipelines share a {container} only when "
        f"told to: give this pipeline a {container} of its own ({own_option}), or set "
        f"durable-execution.store.shared: true for every pipeline that uses the {container} "
        "(their records stay apart, scoped by pipeline id; durable-execution.pipeline-id "
        "names it)"
    )


def unscoped_table_error(store: str, table: str) -> DurableStoreError:
    """The refusal of a table made before records were scoped by pipeline."""
    return DurableStoreError(
        f"{store}: table {table} has no pipeline column: it was made by an older version, "
        "before records were scoped by pipeline, and its records cannot be replayed by this "
        "version (call keys and digests changed). Stop the jobs that use it, then drop it "
        f"(DROP TABLE {table}; for SQLite, or delete the store file), or name a new table "
        "with durable-execution.store.table"
    )
