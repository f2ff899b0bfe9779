"""`tools/upstream_tests.py` runs an upstream checkout's tests against this package (a fake
checkout here, whose own ``flink_agents`` package fails when imported)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.upstream_tests import INTERNALS, known_reason, main

_FILES = {
    # Upstream's package itself: importing it would fail every test.
    "python/flink_agents/__init__.py": "raise AssertionError('upstream flink_agents imported')\n",
    "python/flink_agents/api/__init__.py": "raise AssertionError('upstream api imported')\n",
    "python/flink_agents/api/tests/__init__.py": "",
    "python/flink_agents/api/tests/helper.py": "VALUE = 42\n",
    "python/flink_agents/api/tests/test_fake.py": (
        "import flink_agents._upstream_modules\n"
        "from flink_agents.api.events.event import Event\n"
        "from flink_agents.api.tests.helper import VALUE\n"
        "def test_ours():\n"
        "    assert Event(type='t').type == 't'\n"
        "def test_name():\n"
        "    assert __name__ == 'flink_agents.api.tests.test_fake'\n"
        "def test_fails():\n"
        "    assert VALUE == 41\n"
    ),
    "python/flink_agents/api/tests/test_broken.py": (
        "import flink_agents.no_such_module\n"
        "def test_a(): pass\n"
        "class TestB:\n"
        "    def test_b(self): pass\n"
    ),
    "python/flink_agents/plan/tests/test_internal.py": "def test_x():\n    assert False\n",
    "python/flink_agents/e2e_tests/test_job.py": "def test_job():\n    assert False\n",
}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    for name, text in _FILES.items():
        path = tmp_path / "upstream" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "upstream"


def test_upstreams_tests_run_against_this_package(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "outcomes.json"
    assert main([str(checkout), "--json", str(out)]) == 0
    outcomes = {o["nodeid"]: o for o in json.loads(out.read_text())}
    assert {n: o["outcome"] for n, o in outcomes.items()} == {
        "api/tests/test_fake.py::test_ours": "passed",
        "api/tests/test_fake.py::test_name": "passed",
        "api/tests/test_fake.py::test_fails": "failed",
        "api/tests/test_broken.py::test_a": "failed",
        "api/tests/test_broken.py::TestB::test_b": "failed",
        "plan/tests/test_internal.py::test_x": "failed",
    }  # e2e_tests are not run
    assert "assert 42 == 41" in outcomes["api/tests/test_fake.py::test_fails"]["message"]
    assert outcomes["api/tests/test_broken.py::test_a"]["message"].startswith(
        "import: ModuleNotFoundError"
    )
    assert known_reason("plan/tests/test_internal.py::test_x") is not None
    assert known_reason("plan/tests/test_internal.py::test_x")[0] == INTERNALS  # type: ignore[index]
    report = capsys.readouterr().out
    assert "Open failures (3)" in report
    assert "Known, internals (1)" in report
    api_row = next(line for line in report.splitlines() if line.startswith("api "))
    assert api_row.split()[1:4] == ["2", "3", "0"]
