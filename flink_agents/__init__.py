"""pyflink-agents: agents defined in Python, run as keyed operators on Apache Flink.

Importing the package puts a virtual environment's `bin` first on PATH, as activating it
would (`flink_agents._virtual_env`): PyFlink's thread mode then works when a job is started
with the environment's python without activating it.
"""

from flink_agents import _virtual_env

_virtual_env.activate()

__version__ = "0.1.0"
