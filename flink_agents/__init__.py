"""pyflink-agents: agents defined in Python, run as keyed operators on Apache Flink.

Importing the package puts a virtual environment's `bin` first on PATH, as activating it
would (`flink_agents._virtual_env`): PyFlink's thread mode then works when a job is started
with the environment's python without activating it. Upstream's modules that are not here
fail with a message saying what to use instead (`flink_agents._upstream_modules`).
"""

from flink_agents import _upstream_modules, _virtual_env

__version__ = "0.1.0"

_virtual_env.activate()
_upstream_modules.install()
