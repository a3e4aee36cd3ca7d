"""`secrag backfill SOURCE`: one source or user folder refreshed through Dagster's run queue (visible in the
UI, within its concurrency limit), optionally pinned to an older upstream version, optionally waited for."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

import click

from secrag.errors import ConfigError, SecragError

TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}


def backfill_config(source: str, pin: str | None, force: bool) -> dict[str, Any]:
    """The run config of refresh_SOURCE: the source's publish op's (`pin`, `force`), or the folder's (`force`)."""
    from pipeline.definitions import folders_file
    from pipeline.folders import load_folders
    from pipeline.sources.registry import default_registry
    from secrag.settings import get_settings

    registry = default_registry()
    if source in registry:
        return {"ops": {f"sources__{source}": {"config": {"pin": pin, "force": force}}}}
    folders = {f.name for f in load_folders(folders_file(get_settings()), reserved=frozenset(registry))}
    if source not in folders:
        raise ConfigError(f"unknown source or folder {source!r}", hint="see `secrag sources list` and folders.yaml")
    if pin:
        raise ConfigError(f"{source} is a user folder: it has no upstream version to pin", hint="leave out --version")
    return {"ops": {f"folders__{source}": {"config": {"force": force}}}}


@click.command()
@click.argument("source")
@click.option(
    "--version", "pin", default=None, help="Commit SHA (full) or release tag to publish instead of the latest."
)
@click.option(
    "--force", is_flag=True, help="Publish even when the version (or folder) is empty or shrank suspiciously."
)
@click.option("--wait/--no-wait", default=False, show_default=True, help="Wait for the run and exit 1 if it fails.")
@click.option(
    "--dagster-url",
    default="http://127.0.0.1:3000",
    show_default=True,
    envvar="SECRAG_DAGSTER_URL",
    help="The Dagster webserver (`secrag run` starts it).",
)
@click.option("--timeout", default=3600, show_default=True, type=click.IntRange(1), help="Seconds --wait waits.")
def backfill(source: str, pin: str | None, force: bool, wait: bool, dagster_url: str, timeout: int) -> None:
    """Queue the refresh_SOURCE job (publish, then embed) on the running Dagster; SOURCE is an online source or
    a user folder of folders.yaml (which takes no --version)."""
    from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

    from pipeline.jobs import refresh_job_name

    url = urlsplit(dagster_url)
    client = DagsterGraphQLClient(
        url.hostname or "127.0.0.1", port_number=url.port, use_https=url.scheme == "https", timeout=30
    )
    run_config = backfill_config(source, pin, force)
    tags = {"secrag/backfill": "cli", **({"secrag/pin": pin} if pin else {})}
    try:
        run_id = client.submit_job_execution(refresh_job_name(source), run_config=run_config, tags=tags)
    except (DagsterGraphQLClientError, OSError, Exception) as exc:  # noqa: BLE001 - gql/requests errors vary
        root: BaseException = exc
        while root.__cause__ or root.__context__:
            root = root.__cause__ or root.__context__  # type: ignore[assignment]
        reason = type(root).__name__
        raise SecragError(
            f"Dagster at {dagster_url} did not take the run ({reason})",
            hint="start it with `secrag run`, or pass --dagster-url",
        ) from exc
    click.echo(f"queued {refresh_job_name(source)} as run {run_id}: {dagster_url}/runs/{run_id}")
    if not wait:
        return
    deadline, status = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        now = client.get_run_status(run_id).value
        if now != status:
            click.echo(f"run {run_id}: {now}")
            status = now
        if status in TERMINAL:
            break
        time.sleep(2)
    if status != "SUCCESS":
        raise SecragError(f"run {run_id} ended {status or 'unfinished'}", hint=f"see {dagster_url}/runs/{run_id}")
