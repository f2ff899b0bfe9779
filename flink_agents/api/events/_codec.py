"""Where `runtime/agent_engine.py` imports the value codec from, until its import names
`flink_agents.api._values` (the codec itself)."""

from flink_agents.api._values import check_state_value, decode_value, encode_value

__all__ = ["check_state_value", "decode_value", "encode_value"]
