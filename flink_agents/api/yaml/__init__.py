"""Agents defined in YAML files (upstream's `flink_agents.api.yaml`): the format
(`specs`), its short names (`aliases`) and the loader (`loader`), which
``AgentsExecutionEnvironment.load_yaml`` runs. See docs/yaml.md."""

__all__: list[str] = []
