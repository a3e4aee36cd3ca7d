"""The Dagster launcher: DAGSTER_HOME under the data dir, child environment, stopping the group."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from secrag.errors import ConfigError
from secrag.settings import REPO_ROOT, Settings
from secrag_cli import dagster_launcher as launcher
from secrag_cli import processes


def _settings(tmp_path: Path, **kw: object) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path / "data", **kw)  # type: ignore[arg-type]


def test_home_holds_a_copy_of_the_deployment_instance_yaml(tmp_path: Path):
    home = launcher.prepare_home(_settings(tmp_path))
    assert home == (tmp_path / "data" / "dagster").resolve()
    assert (home / "dagster.yaml").read_text() == (REPO_ROOT / "deploy" / "dagster.yaml").read_text()


def test_the_root_instance_yaml_needs_no_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Dagster CLI commands from the repository root read ./dagster.yaml: it names no variable."""
    from dagster._core.instance.config import dagster_instance_config

    monkeypatch.delenv("SECRAG_DAGSTER_PG_URL", raising=False)
    config, _ = dagster_instance_config(str(REPO_ROOT))
    assert "storage" not in config and config["telemetry"] == {"enabled": False}


def test_children_get_resolved_urls_and_the_mirror(tmp_path: Path):
    settings = _settings(tmp_path, upstream_mirror=tmp_path / "snap")
    env = launcher.dagster_environment(
        settings,
        database_url="postgresql://db/secrag",
        instance_url="postgresql://db/secrag_dagster",
        home=tmp_path / "home",
    )
    assert env["SECRAG_DATABASE_URL"] == "postgresql://db/secrag"
    assert env["SECRAG_DAGSTER_PG_URL"] == "postgresql://db/secrag_dagster"
    assert env["DAGSTER_HOME"] == str(tmp_path / "home")
    assert env["SECRAG_UPSTREAM_MIRROR"] == str((tmp_path / "snap").resolve())
    assert (env["SECRAG_CODE_SERVER_HOST"], env["SECRAG_CODE_SERVER_PORT"]) == ("127.0.0.1", "4266")
    env_file = launcher.write_env_file(tmp_path, env)
    assert "export SECRAG_DAGSTER_PG_URL=postgresql://db/secrag_dagster" in env_file.read_text()
    assert "export SECRAG_CODE_SERVER_PORT=4266" in env_file.read_text()


def test_the_production_process_model():
    """A code server for the definitions; the webserver and the daemon load workspace.yaml. No `dagster dev`."""
    endpoints = launcher.Endpoints(host="0.0.0.0", webserver_port=3001, code_server_port=4300)
    code_server = launcher.code_server_command(endpoints)
    assert code_server[1:] == [
        *("code-server", "start", "-m", "pipeline.definitions"),
        *("-h", "127.0.0.1", "-p", "4300", "--location-name", "secrag"),
    ]
    assert launcher.webserver_command(endpoints)[1:] == [
        "-h",
        "0.0.0.0",
        "-p",
        "3001",
        "-w",
        str(launcher.WORKSPACE_YAML),
    ]
    assert launcher.daemon_command()[1:] == ["run", "-w", str(launcher.WORKSPACE_YAML)]
    with socket.socket() as closed:  # a port nothing listens on: not serving
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert launcher.code_server_serving(launcher.Endpoints(code_server_port=port), timeout=1) is False
    for command in (code_server, launcher.webserver_command(endpoints), launcher.daemon_command()):
        assert "dev" not in command and Path(command[0]).is_file()


def test_the_workspace_points_at_the_code_server(monkeypatch: pytest.MonkeyPatch):
    from dagster._core.workspace.config_schema import process_workspace_config

    monkeypatch.setenv("SECRAG_CODE_SERVER_HOST", "code-server")
    monkeypatch.setenv("SECRAG_CODE_SERVER_PORT", "4266")
    raw = yaml.safe_load(launcher.WORKSPACE_YAML.read_text())
    result = process_workspace_config(raw)
    assert result.success, result.errors
    [entry] = result.value["load_from"]
    assert entry["grpc_server"]["location_name"] == "secrag"
    assert (entry["grpc_server"]["host"], entry["grpc_server"]["port"]) == ("code-server", 4266)


def test_a_code_server_that_exits_is_a_one_line_error(tmp_path: Path):
    proc = subprocess.Popen(["sh", "-c", "exit 3"])
    proc.wait()
    with pytest.raises(ConfigError, match="code server exited with code 3"):
        launcher.wait_for_code_server(proc, launcher.Endpoints(code_server_port=1), timeout=5)


def test_stopping_reaches_every_process_of_the_group(tmp_path: Path):
    pids = tmp_path / "pids"
    # A parent ignoring SIGTERM with a grandchild: the group gets SIGTERM, then SIGKILL after the grace.
    script = f"trap '' TERM; sleep 60 & echo $! > {pids}; wait"
    proc = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    deadline = time.monotonic() + 10
    while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = int(pids.read_text())
    code = processes.stop_group(proc, grace=1.0)
    assert code == -signal.SIGKILL
    assert _gone(grandchild)


def _gone(pid: int, wait: float = 5.0) -> bool:
    """Dead or a zombie (an orphan whose reaper is slow in containers)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in {"Z", "X"}:
            return True
        time.sleep(0.05)
    return False


def test_the_instance_yaml_is_valid_dagster_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Dagster validates the copied file (e.g. run limits under `concurrency`, not the coordinator):
    two runs at once, one per source, one embedding step at a time."""
    from dagster._core.instance.config import dagster_instance_config

    home = launcher.prepare_home(_settings(tmp_path))
    monkeypatch.setenv("SECRAG_DAGSTER_PG_URL", "postgresql://db/secrag_dagster")
    config, _ = dagster_instance_config(str(home))
    assert config["concurrency"] == {
        "runs": {
            "max_concurrent_runs": 2,
            "tag_concurrency_limits": [
                {"key": "secrag/source", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}
            ],
        },
        "pools": {"default_limit": 1},
    }


def test_json_logs_reach_every_dagster_process():
    endpoints = launcher.Endpoints(log_format="json")
    for command in (
        launcher.code_server_command(endpoints),
        launcher.webserver_command(endpoints),
        launcher.daemon_command(endpoints),
    ):
        assert command[-2:] == ["--log-format", "json"]
    assert "--log-format" not in launcher.daemon_command()
