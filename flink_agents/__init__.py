"""pyflink-agents: agents defined in Python, run as keyed operators on Apache Flink."""

__version__ = "0.1.0"
