"""`secrag serve`: the read-only HTTP API (and MCP tools) with uvicorn."""

from __future__ import annotations

import click

from .run import check_port_free


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535), help="TCP port.")
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Worker processes (each loads the embedding model and keeps its own quotas: a caller may get up to N "
    "times each rate and slot count).",
)
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
)
@click.option("--ssl-certfile", type=click.Path(exists=True, dir_okay=False), help="Serve https with this certificate.")
@click.option("--ssl-keyfile", type=click.Path(exists=True, dir_okay=False), help="The certificate's private key.")
@click.option(
    "--forwarded-allow-ips",
    default=None,
    envvar="SECRAG_FORWARDED_ALLOW_IPS",  # one variable for compose, Kubernetes and systemd
    show_envvar=True,
    help="Reverse proxies (comma-separated addresses or networks) whose X-Forwarded-For names the client; "
    "unset: the peer address is the client (quotas count per client address).",
)
def serve(
    host: str,
    port: int,
    workers: int,
    log_level: str,
    ssl_certfile: str | None,
    ssl_keyfile: str | None,
    forwarded_allow_ips: str | None,
) -> None:
    """Serve the search API at http://HOST:PORT/v1 (OpenAPI at /docs, MCP at /mcp/)."""
    import uvicorn

    from secrag import logs

    log_format = (click.get_current_context().obj or {}).get("log_format", "text")

    if bool(ssl_certfile) != bool(ssl_keyfile):
        raise click.UsageError("--ssl-certfile and --ssl-keyfile go together")
    check_port_free(host, port, "--port")  # one line, not a traceback from inside uvicorn
    uvicorn.run(
        "serving.api.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        log_config=logs.config_dict(log_format, log_level),  # applied again in every worker process
        proxy_headers=forwarded_allow_ips is not None,
        forwarded_allow_ips=forwarded_allow_ips,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
        server_header=False,
    )
