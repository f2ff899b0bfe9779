"""The bash tool: what may run (checked before running), the environment it runs with,
its timeout, and that it runs nothing unless ``skills.commands.enabled`` is on."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.core_options import AgentConfiguration, AgentExecutionOptions
from flink_agents.api.skills import BASH_TOOL, Skills
from flink_agents.runtime.skill.commands import CommandPolicy, check_command, run_command
from flink_agents.runtime.skill.tools import BashTool, skill_tools

POLICY = CommandPolicy(enabled=True, allowed_commands=("echo", "bc", "env", "cat"))


@pytest.mark.parametrize(
    "command",
    ['echo "2 ^ 3" | bc', "echo a && echo b || echo c; echo d", "echo 'a | rm'", "echo '#x'"],
)
def test_allowed_commands_pass(command: str, tmp_path: Path) -> None:
    assert check_command(command, POLICY, tmp_path) is None


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("rm -rf /tmp/x", "'rm' is not an allowed command"),
        ("echo a | sh", "'sh' is not an allowed command"),
        ("echo a; rm x", "'rm' is not an allowed command"),
        ("echo $(rm x)", "'$' is not allowed"),
        ("echo `rm x`", "'`' is not allowed"),
        ('echo "$HOME"', "'$' is not allowed"),
        ("echo a > /tmp/f", "'>' is not allowed"),
        ("cat < /etc/passwd", "'<' is not allowed"),
        ("echo a & rm x", "'&' is not allowed"),
        ("(rm x)", "'(' is not allowed"),
        ("echo a\nrm x", "'\\n' is not allowed"),
        ("X=1 echo a", "'X=1' is not an allowed command"),
        ("{rm,-rf,x}", "is not an allowed command"),
        ("echo a |", "an empty command"),
        ("echo 'open", "does not parse"),
    ],
)
def test_anything_else_is_refused(command: str, reason: str, tmp_path: Path) -> None:
    refused = check_command(command, POLICY, tmp_path)
    assert refused is not None and reason in refused


def test_a_script_runs_only_from_an_allowed_folder(tmp_path: Path) -> None:
    skill = tmp_path / "skill"
    (skill / "scripts").mkdir(parents=True)
    (skill / "scripts" / "go.sh").write_text("echo went\n", encoding="utf-8")
    policy = CommandPolicy(enabled=True, script_dirs=(skill,))
    assert check_command("./scripts/go.sh", policy, skill) is None
    assert check_command(f"{skill}/scripts/go.sh", policy, tmp_path) is None
    refused = check_command("../outside.sh", policy, skill)
    assert refused is not None and "not an allowed command" in refused


def test_a_command_runs_without_the_processs_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    monkeypatch.setenv("DATABASE_PASSWORD", "hunter2")
    out = run_command("env", tmp_path, 10)
    assert "sk-secret-value" not in out and "hunter2" not in out
    assert "PATH=" in out
    assert run_command('echo "2 ^ 10" | bc', tmp_path, 10) == "1024"


def test_a_command_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    marker = tmp_path / "still-running"
    started = time.monotonic()
    out = run_command(f"sleep 30 | cat; touch {marker}", tmp_path, 0.3)
    assert "timed out after 0.3 s" in out
    assert time.monotonic() - started < 10
    assert not marker.exists()


def test_a_failing_command_says_its_exit_code(tmp_path: Path) -> None:
    assert run_command("cat missing-file", tmp_path, 10).startswith("Error (exit code 1)")


def _bash(tmp_path: Path, **config: object) -> BashTool:
    (tmp_path / "skills" / "calc").mkdir(parents=True)
    (tmp_path / "skills" / "calc" / "SKILL.md").write_text(
        "---\nname: calc\ndescription: Adds.\n---\nUse bc.\n", encoding="utf-8"
    )
    tools = skill_tools({"s": Skills.from_local_dir(str(tmp_path / "skills"))})
    bash = tools[BASH_TOOL]
    assert isinstance(bash, BashTool)

    class Setup(BaseChatModelSetup):
        pass

    setup = Setup(connection="c", skills=["calc"], allowed_commands=["echo", "bc"])
    return bash.for_setup(setup, AgentConfiguration(config))


def test_commands_are_off_by_default(tmp_path: Path) -> None:
    assert AgentExecutionOptions.SKILLS_COMMANDS_ENABLED.get_default_value() is False
    out = _bash(tmp_path).run('echo "1 + 1" | bc')
    assert "skills.commands.enabled" in out and "2" not in out


def test_the_bash_tool_runs_what_the_setup_allows(tmp_path: Path) -> None:
    bash = _bash(tmp_path, **{"skills.commands.enabled": True})
    assert bash.run('echo "1 + 1" | bc') == "2"
    assert bash.run("ls /").startswith("Command rejected: 'ls' is not an allowed command")
    assert "not inside a skill's folder" in bash.run("echo hi", cwd="/")
    assert bash.run("echo hi", cwd=str(tmp_path / "skills" / "calc")) == "hi"


def test_the_option_caps_the_timeout_the_model_asks_for(tmp_path: Path) -> None:
    bash = _bash(tmp_path, **{"skills.commands.enabled": True, "skills.command-timeout-s": 0.2})
    bash = bash.model_copy(
        update={
            "policy": bash.policy.__class__(
                **{**bash.policy.__dict__, "allowed_commands": ("sleep",)}
            )
        }  # pyright: ignore[reportOptionalMemberAccess]
    )
    assert "timed out after 0.2 s" in bash.run("sleep 30", timeout=600)
