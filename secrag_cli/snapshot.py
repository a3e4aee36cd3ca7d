"""`secrag snapshot export|import`: a store to start from (docs/howto/start-from-snapshot.md)."""

from __future__ import annotations

from pathlib import Path

import click

from secrag.db import database
from secrag.db.queries import Queries, one_row
from secrag.settings import Settings, get_settings

from .errors import SecragGroup


@click.group(cls=SecragGroup)
def snapshot() -> None:
    """Export the public part of the store to one file, or start a fresh store from one."""


@snapshot.command("export")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--sign-key",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="An ed25519 private key (PEM) to sign the manifest with (needs the cryptography package).",
)
def export_command(file: Path, sign_key: Path | None) -> None:
    """Write FILE (a tar; .tar.gz compresses): the public sources, their documents, chunks and the active model's
    vectors, and the technique lookup; never user folders, one-time documents, tuning or the query log."""
    from pipeline.snapshot.export import export_snapshot

    settings = get_settings()
    url = database.database_url(settings)
    manifest = export_snapshot(url, settings.sql_dir, settings.models_dir, file, sign_key)
    rows = manifest.rows()
    click.echo(
        f"snapshot {file}: {file.stat().st_size / 2**20:.1f} MiB, schema version {manifest.schema_version}, "
        f"model {manifest.model.id} ({manifest.model.digest}), {len(manifest.sources)} sources, "
        f"{rows['documents']} documents, {rows['chunks']} chunks, {rows['embeddings']} vectors"
        + (", signed" if sign_key else "")
    )


def import_into_store(location: str, settings: Settings, url: str) -> None:
    """Fetch (a URL) or read (a file) the snapshot and import it into the store at `url`."""
    from pipeline.snapshot.loading import import_snapshot, local_model
    from pipeline.snapshot.origin import local_copy

    model = local_model(settings.embedding_model, settings.models_dir)
    with (
        local_copy(location, settings) as path,
        database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn,
    ):
        done = import_snapshot(conn, settings.sql_dir, path, model, settings.snapshot_public_key)
    click.echo(
        f"snapshot imported in {done.seconds:.1f}s: {len(done.manifest.sources)} sources, {done.rows['documents']} "
        f"documents, {done.rows['chunks']} chunks, model {model.id} (active: {done.active_model})"
        + (", signature verified" if done.signed else ", signature not checked (SECRAG_SNAPSHOT_PUBLIC_KEY unset)")
    )


def start_from(settings: Settings, url: str) -> None:
    """`secrag run`'s first step with SECRAG_START_FROM set: the snapshot imported into a store holding no
    public documents yet (a fresh one), and left aside on any other, so it applies once."""
    if not settings.start_from:
        return
    q = Queries(settings.sql_dir, "snapshot")
    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        public = int(one_row(conn.execute(q.public_documents))[0])
    if public:
        click.echo(f"SECRAG_START_FROM left aside: the store already holds {public} public documents")
        return
    click.echo(f"starting the store from the snapshot {settings.start_from}")
    import_into_store(settings.start_from, settings, url)


@snapshot.command("import")
@click.argument("location")
def import_command(location: str) -> None:
    """Verify LOCATION (a snapshot file or https URL) and load it into a fresh store in one transaction:
    checksums, schema version, model (SECRAG_EMBEDDING_MODEL, same weights) and, with
    SECRAG_SNAPSHOT_PUBLIC_KEY set, its signature; a store with public documents is refused."""
    settings = get_settings()
    import_into_store(location, settings, database.database_url(settings))


@snapshot.command("public-key")
@click.argument("private_key", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def public_key(private_key: Path) -> None:
    """Print the SECRAG_SNAPSHOT_PUBLIC_KEY value that trusts snapshots signed with PRIVATE_KEY (ed25519 PEM)."""
    from pipeline.snapshot.signature import public_key_text

    click.echo(public_key_text(private_key))
