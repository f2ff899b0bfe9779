"""Command-line tools, as upstream's ``flink_agents.cli``: `trace_tree` rebuilds the
InputEvent-rooted trace trees of an event log (``python -m flink_agents.cli.trace_tree``,
installed as ``flink-agents-trace-tree``)."""

__all__: list[str] = []
