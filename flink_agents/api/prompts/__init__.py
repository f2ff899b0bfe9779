"""Prompts: `Prompt`, `LocalPrompt` and the template filling they use."""

from flink_agents.api.prompts.prompt import LocalPrompt, Prompt
from flink_agents.api.prompts.utils import SafeFormatter, format_string

__all__ = ["LocalPrompt", "Prompt", "SafeFormatter", "format_string"]
