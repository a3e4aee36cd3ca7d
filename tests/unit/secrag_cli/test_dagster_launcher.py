"""The Dagster launcher: DAGSTER_HOME under the data dir, child environment, stopping the group."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from secrag.settings import Settings
from secrag_cli import dagster_launcher as launcher
from secrag_cli import processes


def _settings(tmp_path: Path, **kw: object) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path / "data", **kw)  # type: ignore[arg-type]


def test_home_holds_a_copy_of_the_instance_yaml(tmp_path: Path):
    home = launcher.prepare_home(_settings(tmp_path))
    assert home == (tmp_path / "data" / "dagster").resolve()
    text = (home / "dagster.yaml").read_text()
    assert "SECRAG_DAGSTER_PG_URL" in text and "max_concurrent_runs: 2" in text


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
    env_file = launcher.write_env_file(tmp_path, env)
    assert "export SECRAG_DAGSTER_PG_URL=postgresql://db/secrag_dagster" in env_file.read_text()
    command = launcher.dagster_command("127.0.0.1", 3000)
    assert command[1:] == ["dev", "-h", "127.0.0.1", "-p", "3000", "-w", str(launcher.WORKSPACE_YAML)]


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
    """Dagster validates the copied file (e.g. run limits under `concurrency`, not the coordinator)."""
    from dagster._core.instance.config import dagster_instance_config

    home = launcher.prepare_home(_settings(tmp_path))
    monkeypatch.setenv("SECRAG_DAGSTER_PG_URL", "postgresql://db/secrag_dagster")
    config, _ = dagster_instance_config(str(home))
    assert config["concurrency"] == {"runs": {"max_concurrent_runs": 2}, "pools": {"default_limit": 1}}
