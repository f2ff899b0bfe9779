"""The standalone cluster's command line does what its docstring shows (no cluster is
started: the cluster's methods are replaced)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tools.flink_cluster import standalone
from tools.flink_cluster.standalone import StandaloneCluster, main


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []

    def submit(self: StandaloneCluster, script: str, args: list[str]) -> str:
        calls.append((self.rest_port, script, list(args)))
        return "0" * 32

    monkeypatch.setattr(StandaloneCluster, "submit", submit)
    (tmp_path / "ports.json").write_text(json.dumps({"rpc": 6123, "rest": 8081}))
    return calls


def test_the_docstrings_commands_are_the_cli() -> None:
    doc = standalone.__doc__ or ""
    for command in ("start", "status", "submit", "stop"):
        assert f"standalone.py {command} --dir" in doc


@pytest.mark.parametrize(
    "argv",
    [
        ["submit", "--dir", "{dir}", "job.py", "--", "--my-arg", "1"],
        ["submit", "--dir", "{dir}", "--job", "job.py", "--", "--my-arg", "1"],
        ["submit", "job.py", "--dir", "{dir}", "--", "--my-arg", "1"],
    ],
)
def test_submit_takes_the_job_script_and_its_arguments(
    submitted: list[tuple[Any, ...]], tmp_path: Path, argv: list[str], capsys: Any
) -> None:
    assert main([a.format(dir=tmp_path) for a in argv]) == 0
    assert submitted == [(8081, "job.py", ["--my-arg", "1"])]
    assert capsys.readouterr().out.strip() == "0" * 32


def test_submit_without_a_job_says_how(
    submitted: list[tuple[Any, ...]], tmp_path: Path, capsys: Any
) -> None:
    with pytest.raises(SystemExit):
        main(["submit", "--dir", str(tmp_path)])
    assert "submit --dir DIR job.py" in capsys.readouterr().err
    assert submitted == []


def test_status_prints_the_overview_or_says_nothing_answers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    assert main(["status", "--dir", str(tmp_path)]) == 1  # never started
    assert "start it first" in capsys.readouterr().err
    (tmp_path / "ports.json").write_text(json.dumps({"rpc": 6123, "rest": 8081}))
    monkeypatch.setattr(StandaloneCluster, "rest", lambda self, path: {"taskmanagers": 1})
    assert main(["status", "--dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out) == {"taskmanagers": 1}
