"""Start Dagster (webserver, daemon, code server) for `secrag run` in its own process group.

The instance lives in the `secrag_dagster` database of the same PostgreSQL server; DAGSTER_HOME is
`<data dir>/dagster`. Sources use the real upstreams, or local mirrors when
SECRAG_UPSTREAM_MIRROR is set (built once here, before the sensors start).
"""

from __future__ import annotations

import filecmp
import logging
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from secrag import database
from secrag.settings import REPO_ROOT, Settings

from .processes import spawn

log = logging.getLogger(__name__)

INSTANCE_YAML = REPO_ROOT / "dagster.yaml"
WORKSPACE_YAML = REPO_ROOT / "workspace.yaml"


def prepare_home(settings: Settings) -> Path:
    """DAGSTER_HOME under the data dir, holding a copy of the repository's dagster.yaml."""
    home = (settings.data_dir / "dagster").resolve()
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    if not target.is_file() or not filecmp.cmp(INSTANCE_YAML, target, shallow=False):
        shutil.copyfile(INSTANCE_YAML, target)
    return home


def dagster_environment(settings: Settings, *, database_url: str, instance_url: str, home: Path) -> dict[str, str]:
    """The children's environment: resolved URLs (so no child starts a server), offline model."""
    env = dict(os.environ)
    env.update(
        {
            "DAGSTER_HOME": str(home),
            "SECRAG_DAGSTER_PG_URL": instance_url,
            "SECRAG_DATABASE_URL": database_url,
            "SECRAG_DATA_DIR": str(settings.data_dir.resolve()),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }
    )
    env.pop("DATABASE_URL", None)  # SECRAG_DATABASE_URL above is the one to use
    if settings.upstream_mirror is not None:
        env["SECRAG_UPSTREAM_MIRROR"] = str(settings.upstream_mirror.resolve())
    return env


ENV_FILE_KEYS = (
    "DAGSTER_HOME",
    "SECRAG_DAGSTER_PG_URL",
    "SECRAG_DATABASE_URL",
    "SECRAG_DATA_DIR",
    "SECRAG_UPSTREAM_MIRROR",
)


def write_env_file(home: Path, env: dict[str, str]) -> Path:
    """`<DAGSTER_HOME>/env.sh`: `. .secrag/dagster/env.sh` points dagster CLI commands (backfills) at
    the same instance and store as the running Dagster."""
    path = home / "env.sh"
    lines = [f"export {key}={shlex.quote(env[key])}" for key in ENV_FILE_KEYS if key in env]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return path


def dagster_command(host: str, port: int) -> list[str]:
    dagster = Path(sys.executable).with_name("dagster")
    return [str(dagster), "dev", "-h", host, "-p", str(port), "-w", str(WORKSPACE_YAML)]


def start_dagster(
    settings: Settings, database_url: str, *, host: str = "127.0.0.1", port: int = 3000
) -> subprocess.Popen[bytes]:
    """Launch `dagster dev` in its own process group (so one signal reaches every child)."""
    instance_url = database.ensure_database(
        database.server_url(settings), settings.dagster_database_name, timeout=settings.connect_timeout
    )
    home = prepare_home(settings)
    if settings.upstream_mirror is not None:
        from pipeline.sources.configure import upstream_for

        upstream_for(settings)  # build the mirrors once, not in every sensor at startup
    env = dagster_environment(settings, database_url=database_url, instance_url=instance_url, home=home)
    write_env_file(home, env)
    command = dagster_command(host, port)
    log.info(
        "starting dagster",
        extra={
            "url": f"http://{host}:{port}",
            "dagster_home": str(home),
            "instance": database.describe(instance_url),
        },
    )
    return spawn(command, cwd=REPO_ROOT, env=env)
