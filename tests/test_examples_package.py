"""``flink_agents.examples`` takes in upstream's examples from a ``flink_agents/examples``
folder on ``sys.path`` (docs/migrating-from-flink-agents.md, "Running an upstream example")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_an_examples_folder_on_the_python_path_imports_as_upstreams_package(
    tmp_path: Path,
) -> None:
    package = tmp_path / "flink_agents" / "examples" / "quickstart"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("WHERE = 'copied'\n", encoding="utf-8")
    (tmp_path / "flink_agents" / "examples" / "__init__.py").write_text("", encoding="utf-8")
    code = "import flink_agents.examples.quickstart as q, flink_agents.api; print(q.WHERE)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "copied"
