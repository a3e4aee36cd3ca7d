"""`secrag hooks`: the webhook receiver (its own process and login, beside `secrag serve`)."""

from __future__ import annotations

import click

from secrag.settings import get_settings

from .run import check_port_free


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8010, show_default=True, type=click.IntRange(1, 65535), help="TCP port.")
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
)
@click.option(
    "--forwarded-allow-ips",
    default=None,
    envvar="SECRAG_FORWARDED_ALLOW_IPS",
    show_envvar=True,
    help="Reverse proxies (comma-separated addresses or networks) whose X-Forwarded-For names the client; "
    "unset: the peer address is the client (quotas count per client address).",
)
def hooks(host: str, port: int, log_level: str, forwarded_allow_ips: str | None) -> None:
    """Receive signed upstream webhooks at http://HOST:PORT/hooks/github/OWNER/NAME (a repository's: every source
    on it) and /hooks/feed/SOURCE, recording a poke the sources' sensors read on their next tick
    (SECRAG_HOOKS_ENABLED must be on)."""
    import uvicorn

    from secrag import logs
    from serving.hooks.app import create_app

    settings = get_settings()
    if not settings.hooks_enabled:
        raise click.UsageError("the webhook receiver is off: set SECRAG_HOOKS_ENABLED=true")
    try:
        secrets = settings.secrets()
    except ValueError as exc:  # a key that names no repository or source, or a file that is no map
        raise click.UsageError(str(exc)) from exc
    if not secrets:
        raise click.UsageError("no webhook has a secret: set SECRAG_HOOK_SECRETS or SECRAG_HOOK_SECRETS_FILE")
    log_format = (click.get_current_context().obj or {}).get("log_format", "text")
    check_port_free(host, port, "--port")
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        log_level=log_level,
        log_config=logs.config_dict(log_format, log_level),
        proxy_headers=forwarded_allow_ips is not None,
        forwarded_allow_ips=forwarded_allow_ips,
        server_header=False,
    )
