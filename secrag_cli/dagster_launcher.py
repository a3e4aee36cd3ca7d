"""Start Dagster the way it runs in production, for `secrag run`: a gRPC code server for the
`pipeline` definitions, dagster-webserver and dagster-daemon against workspace.yaml, which points at
the code server. Each runs in its own process group; the code server answers its health check before
the other two start, so neither logs a failed location load on a healthy start.

The instance (deploy/dagster.yaml) lives in the `secrag_dagster` database of the same PostgreSQL
server; DAGSTER_HOME is `<data dir>/dagster`. Sources use the real upstreams, or local mirrors when
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
import time
from dataclasses import dataclass
from pathlib import Path

from secrag.db import database
from secrag.errors import ConfigError
from secrag.settings import REPO_ROOT, Settings

from .processes import spawn, stop_group

log = logging.getLogger(__name__)

INSTANCE_YAML = REPO_ROOT / "deploy" / "dagster.yaml"
WORKSPACE_YAML = REPO_ROOT / "workspace.yaml"
DEFINITIONS_MODULE = "pipeline.definitions"
CODE_SERVER_START_SECONDS = 300.0  # loading the definitions (22 sources, the model check) on a busy CPU


@dataclass(frozen=True)
class Endpoints:
    """Where the three Dagster processes listen, and how they log (`secrag --log-format`)."""

    host: str = "127.0.0.1"
    webserver_port: int = 3000
    code_server_host: str = "127.0.0.1"
    code_server_port: int = 4266
    log_format: str = "text"

    def log_args(self) -> list[str]:
        return ["--log-format", "json"] if self.log_format == "json" else []


def prepare_home(settings: Settings) -> Path:
    """DAGSTER_HOME under the data dir, holding a copy of deploy/dagster.yaml."""
    home = (settings.data_dir / "dagster").resolve()
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    if not target.is_file() or not filecmp.cmp(INSTANCE_YAML, target, shallow=False):
        shutil.copyfile(INSTANCE_YAML, target)
    return home


def dagster_environment(
    settings: Settings, *, database_url: str, instance_url: str, home: Path, endpoints: Endpoints | None = None
) -> dict[str, str]:
    """The children's environment: resolved URLs (so no child starts a server), offline model, and
    the code server's address for workspace.yaml."""
    endpoints = endpoints or Endpoints()
    env = dict(os.environ)
    env.update(
        {
            "DAGSTER_HOME": str(home),
            "SECRAG_DAGSTER_PG_URL": instance_url,
            "SECRAG_DATABASE_URL": database_url,
            "SECRAG_DATA_DIR": str(settings.data_dir.resolve()),
            "SECRAG_CODE_SERVER_HOST": endpoints.code_server_host,
            "SECRAG_CODE_SERVER_PORT": str(endpoints.code_server_port),
            "SECRAG_LOG_FORMAT": endpoints.log_format,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TQDM_DISABLE": "1",  # no progress bars from the model libraries in the run logs
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
    "SECRAG_CODE_SERVER_HOST",
    "SECRAG_CODE_SERVER_PORT",
)


def write_env_file(home: Path, env: dict[str, str]) -> Path:
    """`<DAGSTER_HOME>/env.sh`: `. .secrag/dagster/env.sh` points dagster CLI commands (backfills) at
    the same instance, store and code server as the running Dagster."""
    path = home / "env.sh"
    lines = [f"export {key}={shlex.quote(env[key])}" for key in ENV_FILE_KEYS if key in env]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return path


def _bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def code_server_command(endpoints: Endpoints) -> list[str]:
    return [
        _bin("dagster"),
        "code-server",
        "start",
        "-m",
        DEFINITIONS_MODULE,
        "-h",
        endpoints.code_server_host,
        "-p",
        str(endpoints.code_server_port),
        "--location-name",
        "secrag",
        *endpoints.log_args(),
    ]


def code_server_serving(endpoints: Endpoints, timeout: float = 5.0) -> bool:
    """Whether the code server answers the standard gRPC health check for Dagster's API with SERVING
    (what `dagster api grpc-health-check` asks, without starting a Python process per poll)."""
    import grpc
    from grpc_health.v1 import health_pb2
    from grpc_health.v1.health_pb2_grpc import HealthStub

    target = f"{endpoints.code_server_host}:{endpoints.code_server_port}"
    try:
        with grpc.insecure_channel(target) as channel:
            reply = HealthStub(channel).Check(health_pb2.HealthCheckRequest(service="DagsterApi"), timeout=timeout)
    except grpc.RpcError:
        return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def webserver_command(endpoints: Endpoints) -> list[str]:
    return [
        _bin("dagster-webserver"),
        "-h",
        endpoints.host,
        "-p",
        str(endpoints.webserver_port),
        "-w",
        str(WORKSPACE_YAML),
        *endpoints.log_args(),
    ]


def daemon_command(endpoints: Endpoints | None = None) -> list[str]:
    return [_bin("dagster-daemon"), "run", "-w", str(WORKSPACE_YAML), *(endpoints or Endpoints()).log_args()]


def wait_for_code_server(
    proc: subprocess.Popen[bytes], endpoints: Endpoints, timeout: float = CODE_SERVER_START_SECONDS
) -> float:
    """Poll the code server's gRPC health check until it answers; the seconds it took. A code server
    that exits or stays silent for `timeout` is a ConfigError (its own log says why)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if proc.poll() is not None:
            raise ConfigError(
                f"the Dagster code server exited with code {proc.returncode} while loading {DEFINITIONS_MODULE}",
                hint="its log above says why",
            )
        if code_server_serving(endpoints):
            return time.monotonic() - started
        time.sleep(1.0)
    raise ConfigError(
        f"the Dagster code server on {endpoints.code_server_host}:{endpoints.code_server_port} did not answer "
        f"within {timeout:.0f}s"
    )


def start_dagster(
    settings: Settings, database_url: str, endpoints: Endpoints | None = None
) -> list[tuple[str, subprocess.Popen[bytes]]]:
    """Launch the code server, then the webserver and the daemon, each in its own process group (so
    one signal reaches every child); returned in start order. On a failure the started ones are
    stopped before the error is raised."""
    endpoints = endpoints or Endpoints()
    instance_url = database.ensure_database(
        database.server_url(settings), settings.dagster_database_name, timeout=settings.connect_timeout
    )
    home = prepare_home(settings)
    if settings.upstream_mirror is not None:
        from pipeline.sources.configure import upstream_for

        upstream_for(settings)  # build the mirrors once, not in every sensor at startup
    env = dagster_environment(
        settings, database_url=database_url, instance_url=instance_url, home=home, endpoints=endpoints
    )
    write_env_file(home, env)
    log.info(
        "starting dagster",
        extra={
            "url": f"http://{endpoints.host}:{endpoints.webserver_port}",
            "dagster_home": str(home),
            "instance": database.describe(instance_url),
            "code_server": f"{endpoints.code_server_host}:{endpoints.code_server_port}",
        },
    )
    children = [("code-server", spawn(code_server_command(endpoints), cwd=REPO_ROOT, env=env))]
    try:
        took = wait_for_code_server(children[0][1], endpoints)
        log.info("dagster code server ready in %.1fs", took)
        children.append(("dagster-webserver", spawn(webserver_command(endpoints), cwd=REPO_ROOT, env=env)))
        children.append(("dagster-daemon", spawn(daemon_command(endpoints), cwd=REPO_ROOT, env=env)))
    except BaseException:
        for _, proc in reversed(children):
            stop_group(proc)
        raise
    return children
