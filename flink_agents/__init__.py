"""pyflink-agents: agents defined in Python, run as keyed operators on Apache Flink."""

from flink_agents import _upstream_modules

__version__ = "0.1.0"

# Upstream's modules that are not here fail with a message saying what to use instead.
_upstream_modules.install()
