"""A standalone Flink cluster on 127.0.0.1 from the scripts in the apache-flink package.

A JobManager and TaskManagers started with `pyflink/bin/jobmanager.sh` and
`pyflink/bin/taskmanager.sh`, with a private configuration, log and pid folder (nothing
is written to the package or to /tmp's shared pid files), free ports, Java found the way
the runtime finds it, and this interpreter's environment first on PATH so thread-mode
Python inside the TaskManager is this virtual environment.

The daemons' classpath is a `lib/` folder of the cluster's own (`FLINK_LIB_DIR`): links
to the package's `pyflink/lib` jars plus the flink-python jar from `pyflink/opt`. With
flink-python (which holds pemja's Java side) loaded once by the TaskManager's own class
loader, one TaskManager runs any number of thread-mode jobs, one after another and at
once. Left in `opt/` only, each job's class loader loads pemja again, and on Java 15+
every thread-mode job after the first on a TaskManager fails in `open` with
`NoSuchFieldException: loadedLibraryNames` (see docs/operations.md).

    python tools/flink_cluster/standalone.py start --dir /tmp/flink-cluster   # prints the web UI
    python tools/flink_cluster/standalone.py status --dir /tmp/flink-cluster  # REST /overview
    python tools/flink_cluster/standalone.py submit --dir /tmp/flink-cluster job.py -- --my-arg 1
    python tools/flink_cluster/standalone.py stop --dir /tmp/flink-cluster

`start` takes `--slots` (per TaskManager) and `--taskmanagers`; `status` prints the
JobManager's overview (TaskManagers, slots, jobs) as JSON, or says that it does not answer;
`submit` runs `flink run -d` (detached) and prints the job id; the job script may also be
given as `--job job.py`, and its own arguments follow `--`.

In tests: `with StandaloneCluster(path) as cluster: ...` always stops what it started.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flink_agents.runtime.flink.java import ensure_java
from flink_agents.runtime.flink.python_workers import prepare_worker_environment

__all__ = [
    "PARENT_FIRST_PATTERNS",
    "StandaloneCluster",
    "assemble_lib_dir",
    "flink_home",
    "flink_python_jar",
    "free_port",
]

PARENT_FIRST_PATTERNS = "pemja."
"""`classloader.parent-first-patterns.additional` of the cluster: pemja's classes always
come from the TaskManager's class loader (the one that loaded its native library), even
when a job's class loader is asked for them; its own copy in the job's jar is ignored."""


def flink_home() -> Path:
    """The Flink distribution inside the installed apache-flink package (`pyflink/`)."""
    spec = importlib.util.find_spec("pyflink")
    if spec is None or spec.origin is None:
        raise RuntimeError("apache-flink is not installed in this interpreter")
    return Path(spec.origin).parent


def flink_python_jar(home: Path) -> Path:
    """The one `flink-python-*.jar` in the distribution's `opt/` folder."""
    jars = sorted((home / "opt").glob("flink-python*.jar"))
    if len(jars) != 1:
        raise RuntimeError(
            f"expected one flink-python jar in {home / 'opt'}, found {len(jars)}: "
            "reinstall apache-flink"
        )
    return jars[0]


def assemble_lib_dir(home: Path, target: Path) -> Path:
    """Make `target` a Flink `lib/` folder: the distribution's lib jars and flink-python.

    Jars are symbolic links (nothing is copied), made again on every call: links into an
    apache-flink package (`pyflink/lib`, `pyflink/opt`) and links that no longer resolve
    are replaced, so a reinstalled or upgraded package is picked up. Other files put into
    `target` by hand (connector jars) are kept.
    """
    target.mkdir(parents=True, exist_ok=True)
    for entry in target.iterdir():
        if entry.is_symlink() and (
            not entry.exists() or entry.resolve().parent.parent.name == "pyflink"
        ):
            entry.unlink()
    jars = [*sorted((home / "lib").glob("*.jar")), flink_python_jar(home)]
    if not any(jar.name.startswith("flink-dist") for jar in jars):
        raise RuntimeError(f"no flink-dist jar in {home / 'lib'}: reinstall apache-flink")
    for jar in jars:
        link = target / jar.name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(jar)
    return target


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _java_opts(default_config: Path) -> str:
    """The JVM flags of the packaged config (module opens Flink needs on Java 17+)."""
    match = re.search(r"^\s+all:\s*(.+)$", default_config.read_text(), re.MULTILINE)
    return match.group(1).strip() if match else ""


class StandaloneCluster:
    """A JobManager and TaskManager(s) on 127.0.0.1 with state under `directory`.

    Args:
        directory: holds conf/, lib/, log/, pids/ and checkpoints/.
        slots: task slots per TaskManager.
        options: more Flink options for config.yaml (`key: value`).
        env: more environment variables for the daemons (e.g. PYTHONPATH).
        python_jar_in_lib: put flink-python into the cluster's own lib/ (the default).
            False runs the daemons on the package's `pyflink/lib` as it is, like a cluster
            set up by hand from the package's folders: there, on Java 15+, every
            thread-mode job after the first on a TaskManager fails in `open`.
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        slots: int = 2,
        options: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        python_jar_in_lib: bool = True,
    ) -> None:
        self.directory = Path(directory).resolve()
        self.home = flink_home()
        self.conf_dir = self.directory / "conf"
        self.python_jar_in_lib = python_jar_in_lib
        self.lib_dir = self.directory / "lib" if python_jar_in_lib else self.home / "lib"
        self.log_dir = self.directory / "log"
        self.pid_dir = self.directory / "pids"
        self.checkpoint_dir = self.directory / "checkpoints"
        self.slots = slots
        self.extra_options = dict(options or {})
        self.extra_env = dict(env or {})
        self.rpc_port = 0
        self.rest_port = 0

    # ------------------------------------------------------------------ setup

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    @property
    def address(self) -> str:
        """What `flink run -m` takes."""
        return f"127.0.0.1:{self.rest_port}"

    def write_config(self) -> None:
        """A private config.yaml (loopback addresses, free ports, fast failure detection)
        and the cluster's lib/ folder with flink-python in it (see `assemble_lib_dir`)."""
        for d in (self.conf_dir, self.log_dir, self.pid_dir, self.checkpoint_dir):
            d.mkdir(parents=True, exist_ok=True)
        if self.python_jar_in_lib:
            assemble_lib_dir(self.home, self.lib_dir)
        packaged = self.home / "conf"
        for name in ("log4j.properties", "log4j-console.properties", "log4j-cli.properties"):
            source = packaged / name
            if source.exists():
                (self.conf_dir / name).write_text(source.read_text())
        self.rpc_port, self.rest_port = free_port(), free_port()
        options = {
            "env.java.opts.all": _java_opts(packaged / "config.yaml"),
            "env.pid.dir": str(self.pid_dir),
            "env.log.dir": str(self.log_dir),
            "jobmanager.rpc.address": "127.0.0.1",
            "jobmanager.rpc.port": str(self.rpc_port),
            "jobmanager.bind-host": "127.0.0.1",
            "jobmanager.memory.process.size": "1024m",
            "taskmanager.host": "127.0.0.1",
            "taskmanager.bind-host": "127.0.0.1",
            "taskmanager.numberOfTaskSlots": str(self.slots),
            "taskmanager.memory.process.size": "1536m",
            "rest.address": "127.0.0.1",
            "rest.bind-address": "127.0.0.1",
            "rest.port": str(self.rest_port),
            "parallelism.default": "1",
            # A killed TaskManager is noticed in seconds, not the default 50 s.
            "heartbeat.interval": "1000",
            "heartbeat.timeout": "5000",
            "execution.checkpointing.dir": self.checkpoint_dir.as_uri(),
            # The REST API's metric values refresh every second (default 10 s).
            "metrics.fetcher.update-interval": "1000",
            # With flink-python in lib/: pemja's classes from the TaskManager's loader only.
            "classloader.parent-first-patterns.additional": PARENT_FIRST_PATTERNS,
        }
        options.update(self.extra_options)
        # Patterns the caller gives are kept, and pemja's is added to them.
        patterns_key = "classloader.parent-first-patterns.additional"
        patterns = [p for p in options[patterns_key].split(";") if p]
        if PARENT_FIRST_PATTERNS not in patterns:
            options[patterns_key] = ";".join([*patterns, PARENT_FIRST_PATTERNS])
        lines = [f"{key}: {json.dumps(value)}" for key, value in options.items()]
        (self.conf_dir / "config.yaml").write_text("\n".join(lines) + "\n")
        (self.conf_dir / "masters").write_text(f"127.0.0.1:{self.rest_port}\n")
        (self.conf_dir / "workers").write_text("127.0.0.1\n")

    def environment(self) -> dict[str, str]:
        """Environment for the scripts and the processes they start."""
        env = dict(os.environ)
        ensure_java(env)
        prepare_worker_environment(env)
        env.update(
            {
                "FLINK_HOME": str(self.home),
                "FLINK_CONF_DIR": str(self.conf_dir),
                "FLINK_LIB_DIR": str(self.lib_dir),
                "FLINK_LOG_DIR": str(self.log_dir),
                "FLINK_PID_DIR": str(self.pid_dir),
                "PYFLINK_PYTHON": sys.executable,
            }
        )
        for key, value in self.extra_env.items():
            if key == "PYTHONPATH" and env.get("PYTHONPATH"):
                value = os.pathsep.join([value, env["PYTHONPATH"]])
            env[key] = value
        return env

    def _script(self, name: str, *args: str, timeout: float = 120) -> str:
        # The daemons keep the script's working directory: the cluster folder, so that a
        # JVM crash file (hs_err_pid*.log) lands there, not wherever the caller stands.
        result = subprocess.run(
            ["bash", str(self.home / "bin" / name), *args],
            cwd=self.directory if self.directory.is_dir() else None,
            env=self.environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"{name} {' '.join(args)} failed: {result.stderr[-2000:]}")
        return result.stdout

    # ------------------------------------------------------------------ lifecycle

    def start(self, taskmanagers: int = 1, timeout: float = 90) -> None:
        """Start the JobManager and `taskmanagers` TaskManagers; wait until registered."""
        self.write_config()
        self._script("jobmanager.sh", "start")
        self.wait_for(lambda: self.rest("/overview") is not None, timeout, "the JobManager")
        for _ in range(taskmanagers):
            self.start_taskmanager(timeout=timeout)

    def start_taskmanager(self, timeout: float = 90) -> None:
        """Start one more TaskManager and wait until the JobManager knows it."""
        before = set(self.registered_taskmanagers())
        self._script("taskmanager.sh", "start")
        self.wait_for(
            lambda: bool(set(self.registered_taskmanagers()) - before),
            timeout,
            "a TaskManager to register",
        )

    def taskmanager_pids(self) -> list[int]:
        """Pids of the live TaskManager processes this cluster started."""
        return [p for p in self._pids("taskexecutor") if _alive(p)]

    def jobmanager_pids(self) -> list[int]:
        return [p for p in self._pids("standalonesession") if _alive(p)]

    def _pids(self, daemon: str) -> list[int]:
        pids: list[int] = []
        for pid_file in self.pid_dir.glob(f"flink-*-{daemon}.pid"):
            pids += [int(x) for x in pid_file.read_text().split() if x.isdigit()]
        return pids

    def kill_taskmanager(self, sig: int = signal.SIGKILL) -> int:
        """Send `sig` to the newest live TaskManager; returns its pid."""
        pids = self.taskmanager_pids()
        if not pids:
            raise RuntimeError("no TaskManager is running")
        os.kill(pids[-1], sig)
        return pids[-1]

    def stop(self) -> None:
        """Stop every daemon this cluster started (scripts first, then SIGKILL leftovers)."""
        for script in ("taskmanager.sh", "jobmanager.sh"):
            with contextlib.suppress(Exception):
                self._script(script, "stop-all", timeout=60)
        for pid in self.taskmanager_pids() + self.jobmanager_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def __enter__(self) -> StandaloneCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ jobs

    def submit(
        self,
        script: str | Path,
        args: Sequence[str] = (),
        *,
        timeout: float = 180,
        savepoint: str | None = None,
    ) -> str:
        """`flink run -d [-s savepoint] -py script` against this cluster; returns the job id."""
        restore = ["-s", savepoint] if savepoint is not None else []
        result = subprocess.run(
            [
                "bash",
                str(self.home / "bin" / "flink"),
                "run",
                "-m",
                self.address,
                "-d",
                *restore,
                "-py",
                str(script),
                "-pyexec",
                sys.executable,
                "-pyclientexec",
                sys.executable,
                *args,
            ],
            env=self.environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        match = re.search(r"JobID ([0-9a-f]{32})", result.stdout + result.stderr)
        if result.returncode != 0 or match is None:
            raise RuntimeError(
                f"flink run failed ({result.returncode}): "
                f"{_causes(result.stdout + result.stderr)}\n"
                f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
            )
        return match.group(1)

    def rest(self, path: str) -> Any:
        """GET a REST API path; None when the JobManager does not answer."""
        try:
            with urllib.request.urlopen(self.rest_url + path, timeout=5) as response:
                return json.loads(response.read())
        except OSError:
            return None

    def registered_taskmanagers(self) -> list[str]:
        """Ids of the TaskManagers the JobManager knows."""
        answer = self.rest("/taskmanagers")
        return [tm["id"] for tm in answer.get("taskmanagers", [])] if answer else []

    def job_state(self, job_id: str) -> str | None:
        """RUNNING, FINISHED, FAILED... (None when the JobManager does not answer)."""
        answer = self.rest(f"/jobs/{job_id}")
        return str(answer["state"]) if answer and "state" in answer else None

    def wait_for_job(self, job_id: str, states: Sequence[str], timeout: float) -> str:
        """Wait until the job is in one of `states` (or a terminal state); return it."""
        terminal = {"FINISHED", "FAILED", "CANCELED"}
        deadline = time.monotonic() + timeout
        state = None
        while time.monotonic() < deadline:
            state = self.job_state(job_id)
            if state is not None and (state in states or state in terminal):
                return state
            time.sleep(0.2)
        raise TimeoutError(f"job {job_id} still {state} after {timeout:.0f} s")

    @staticmethod
    def wait_for(condition: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.2)
        raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def _causes(output: str, limit: int = 8) -> str:
    """The exception lines of `flink run` output (Java `Caused by:` and Python errors), the
    innermost last: long Java stack traces push them out of the output's tail."""
    pattern = re.compile(r"^(Caused by: .+|[\w.]+(Error|Exception): .+)$")
    found = [line.strip() for line in output.splitlines() if pattern.match(line.strip())]
    return "\n".join(dict.fromkeys(found[-limit:]))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A killed child that is not reaped yet is a zombie: treat it as gone.
    with contextlib.suppress(OSError):
        status = Path(f"/proc/{pid}/status").read_text()
        if "\nState:\tZ" in status:
            return False
    return True


def _split_job_arguments(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """The command line before `--`, and the job's own arguments after it."""
    items = list(argv)
    if "--" in items:
        index = items.index("--")
        return items[:index], items[index + 1 :]
    return items, []


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="A standalone Flink cluster on 127.0.0.1.",
        epilog="submit: the job script's own arguments follow `--`.",
    )
    parser.add_argument("command", choices=["start", "stop", "status", "submit"])
    parser.add_argument("job_script", nargs="?", help="job script for `submit`")
    parser.add_argument("--dir", required=True, help="cluster folder (conf, logs, pids)")
    parser.add_argument("--slots", type=int, default=2, help="task slots per TaskManager")
    parser.add_argument("--taskmanagers", type=int, default=1)
    parser.add_argument("--job", help="job script for `submit` (or give it after `submit`)")
    own, job_args = _split_job_arguments(sys.argv[1:] if argv is None else argv)
    args = parser.parse_intermixed_args(own)
    if args.job_script and args.job and args.job_script != args.job:
        parser.error("give the job script once (after `submit`, or as --job)")
    job = args.job or args.job_script
    if job and args.command != "submit":
        parser.error(f"{args.command} takes no job script")
    cluster = StandaloneCluster(args.dir, slots=args.slots)
    state_file = Path(args.dir) / "ports.json"
    if args.command == "start":
        cluster.start(taskmanagers=args.taskmanagers)
        state_file.write_text(json.dumps({"rpc": cluster.rpc_port, "rest": cluster.rest_port}))
        print(f"Flink REST API and web UI: {cluster.rest_url}")
        return 0
    if state_file.exists():
        ports = json.loads(state_file.read_text())
        cluster.rpc_port, cluster.rest_port = ports["rpc"], ports["rest"]
    if args.command == "stop":
        cluster.stop()
        return 0
    if args.command == "status":
        overview = cluster.rest("/overview") if state_file.exists() else None
        if overview is None:
            print(f"no cluster answers for {args.dir} (start it first)", file=sys.stderr)
            return 1
        print(json.dumps(overview, indent=2))
        return 0
    if not job:
        parser.error("submit needs a job script: submit --dir DIR job.py [-- job arguments]")
    print(cluster.submit(job, job_args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
