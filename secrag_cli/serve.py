"""`secrag serve`: the read-only HTTP API (and MCP tools) with uvicorn."""

from __future__ import annotations

import click


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535), help="TCP port.")
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Worker processes (each loads the embedding model).",
)
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
)
def serve(host: str, port: int, workers: int, log_level: str) -> None:
    """Serve the search API at http://HOST:PORT/v1 (OpenAPI at /docs, MCP at /mcp/)."""
    import uvicorn

    uvicorn.run(
        "serving.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        proxy_headers=False,
        server_header=False,
    )
