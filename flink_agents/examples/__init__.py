"""Where upstream's examples go (``flink_agents.examples``): this package has none of its
own, and takes in any ``flink_agents/examples`` folder on ``sys.path`` (``PYTHONPATH``).

Upstream's examples (python/flink_agents/examples/ of Apache Flink Agents) import one
another as ``flink_agents.examples.quickstart...`` and find their resources by package
name. Copied into ``<folder>/flink_agents/examples/`` with ``<folder>`` on ``PYTHONPATH``,
they import here unchanged (docs/migrating-from-flink-agents.md, "Running an upstream
example"; examples/upstream/ is such a folder).
"""

import os
import sys

__all__: list[str] = []


def _folders_on_sys_path() -> list[str]:
    """Each ``<entry>/flink_agents/examples`` folder of ``sys.path`` but this one."""
    here = os.path.realpath(os.path.dirname(__file__))
    found: list[str] = []
    for entry in sys.path:
        folder = os.path.join(entry or os.curdir, "flink_agents", "examples")
        if os.path.isdir(folder) and os.path.realpath(folder) not in (here, *found):
            found.append(os.path.realpath(folder))
    return found


__path__.extend(_folders_on_sys_path())  # pyright: ignore[reportUnboundVariable]
