"""Upstream's plan-layer path of the function descriptors.

Upstream keeps callable copies of `PythonFunction` and `JavaFunction` here, next to the
descriptors of ``flink_agents.api.function``; here there is one of each, and this module
names them (``PythonFunction(module=..., qualname=...).as_callable()`` is the function).
"""

from flink_agents.api.function import Function, JavaFunction, PythonFunction

__all__ = ["Function", "JavaFunction", "PythonFunction"]
