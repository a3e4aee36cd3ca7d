"""`secrag run`: the main job of `make run`: database up and migrated, then Dagster and the API."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

import click

from secrag.db import database, embedded, migrations
from secrag.errors import ConfigError
from secrag.settings import REPO_ROOT, get_settings

from .processes import spawn, stop_group
from .snapshot import start_from


def check_port_free(host: str, port: int, flag: str) -> None:
    """A one-line error before anything starts, instead of a child dying on bind."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise ConfigError(
                f"port {port} on {host} is in use ({exc.strerror})",
                hint=f"stop what uses it or pick another with {flag}",
            ) from exc


def prepare_database() -> str:
    """Start (or reach) the database, check it, apply migrations; returns its URL."""
    settings = get_settings()
    started = time.monotonic()
    url = database.database_url(settings, create=True)  # `make run` on a fresh machine sets everything up
    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        database.check_requirements(conn)
        applied = migrations.migrate(conn, settings.sql_dir)
        version = migrations.current_version(conn, settings.sql_dir)
    click.echo(
        f"database ready at {database.describe(url)} in {time.monotonic() - started:.1f}s "
        f"(schema version {version}, {len(applied)} migrations applied)"
    )
    return url


def start_api(url: str, host: str, port: int, log_format: str = "text") -> subprocess.Popen[bytes]:
    """`secrag serve` in its own process group, on the already-resolved database URL."""
    env = {
        **os.environ,
        "SECRAG_DATABASE_URL": url,
        "SECRAG_LOG_FORMAT": log_format,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    env.pop("DATABASE_URL", None)
    command = [str(Path(sys.executable).with_name("secrag")), "serve", "--host", host, "--port", str(port)]
    return spawn(command, cwd=REPO_ROOT, env=env)


@click.command()
@click.option("--dagster/--no-dagster", default=True, show_default=True, help="Start Dagster (UI on :3000).")
@click.option("--api/--no-api", default=True, show_default=True, help="Start the search API (on :8000).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address Dagster and the API bind to.")
@click.option("--dagster-port", default=3000, show_default=True, help="Port of the Dagster UI.")
@click.option(
    "--code-server-port", default=4266, show_default=True, help="Port of the Dagster code server (on 127.0.0.1)."
)
@click.option("--api-port", default=8000, show_default=True)
@click.pass_context
def run(
    ctx: click.Context, dagster: bool, api: bool, host: str, dagster_port: int, code_server_port: int, api_port: int
) -> None:
    """Set up the store, then run Dagster (code server, webserver, daemon; sensors on) and the API
    until Ctrl-C or SIGTERM."""
    from .dagster_launcher import Endpoints, start_dagster
    from .status import status

    settings = get_settings()
    if dagster:
        check_port_free(host, dagster_port, "--dagster-port")
        check_port_free("127.0.0.1", code_server_port, "--code-server-port")
    if api:
        check_port_free(host, api_port, "--api-port")
    # The embedded server is stopped on exit only when this command started it.
    started_db = not settings.database_url and not embedded.status(settings.pgdata).running
    url = prepare_database()
    start_from(settings, url)  # SECRAG_START_FROM: once, into a store without public documents
    ctx.invoke(status)
    if not dagster and not api:
        return
    children: list[tuple[str, subprocess.Popen[bytes]]] = []
    log_format = (ctx.obj or {}).get("log_format", "text")  # `secrag --log-format`, passed to every child

    def _stop(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    code = 0
    try:
        if dagster:
            endpoints = Endpoints(
                host=host,
                webserver_port=dagster_port,
                code_server_port=code_server_port,
                log_format=log_format,
            )
            children.extend(start_dagster(settings, url, endpoints))
            click.echo(f"Dagster UI: http://{host}:{dagster_port}")
        if api:
            children.append(("api", start_api(url, host, api_port, log_format)))
            click.echo(f"search API: http://{host}:{api_port}/docs")
        click.echo("running; Ctrl-C stops everything")
        while True:
            for name, proc in children:
                if proc.poll() is not None:
                    click.echo(f"{name} exited with code {proc.returncode}; stopping the rest", err=True)
                    code = proc.returncode or 1
                    raise KeyboardInterrupt(name)
            time.sleep(0.5)
    except KeyboardInterrupt:
        click.echo("stopping")
    finally:
        for _, proc in reversed(children):
            if proc.poll() is None:
                stop_group(proc)
        if started_db:
            embedded.stop(settings.pgdata)
            click.echo("embedded PostgreSQL stopped")
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    sys.exit(code)
