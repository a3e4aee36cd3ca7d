"""`secrag snapshot export|import|verify`: a store to start from (docs/howto/start-from-snapshot.md)."""

from __future__ import annotations

from pathlib import Path

import click

from secrag.db import database
from secrag.db.queries import Queries, one_row
from secrag.errors import ConfigError
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
    """Write FILE (a tar; .tar.gz compresses): the public sources, their public documents, chunks and the active
    model's vectors, and the technique lookup; never user folders, one-time documents, a document with a tenant,
    users or groups, tuning or the query log."""
    from pipeline.snapshot.export import export_snapshot

    settings = get_settings()
    url = database.database_url(settings)
    exported = export_snapshot(url, settings.sql_dir, settings.models_dir, file, sign_key)
    manifest, left = exported.manifest, exported.left_out
    rows = manifest.rows()
    click.echo(
        f"snapshot {file}: {file.stat().st_size / 2**20:.1f} MiB, schema version {manifest.schema_version}, "
        f"model {manifest.model.id} ({manifest.model.digest}), {len(manifest.sources)} sources, "
        f"{rows['documents']} documents, {rows['chunks']} chunks, {rows['embeddings']} vectors, sentence model "
        f"{manifest.trained.model_id if manifest.trained else 'none'}" + (", signed" if sign_key else "")
    )
    click.echo(
        f"left out {left.total} documents that are not public: {left.user_folders} of user folders, "
        f"{left.one_time} one-time, {left.restricted} with a tenant, users or groups"
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
        done = import_snapshot(
            conn,
            settings.sql_dir,
            path,
            model,
            settings.snapshot_public_key,
            settings.snapshot_max_bytes,
            models_dir=settings.models_dir,
        )
    click.echo(
        f"snapshot imported in {done.seconds:.1f}s: {len(done.manifest.sources)} sources, {done.rows['documents']} "
        f"documents, {done.rows['chunks']} chunks, model {model.id} (active: {done.active_model}), sentence model "
        f"{done.sentence_model or 'none'}"
        + (", signature verified" if done.signed else ", signature not checked (SECRAG_SNAPSHOT_PUBLIC_KEY unset)")
    )


def start_from(settings: Settings, url: str, location: str | None = None) -> None:
    """Import the snapshot at `location` (default SECRAG_START_FROM; none: nothing to do) into a store holding
    no public documents yet (a fresh one); on any other it is left aside, so a step run at every start applies
    it once. `secrag run`'s first step, and `secrag snapshot import --once`."""
    location = location or settings.start_from
    if not location:
        return
    q = Queries(settings.sql_dir, "snapshot")
    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        public = int(one_row(conn.execute(q.public_documents))[0])
    if public:
        click.echo(f"snapshot {location} left aside: the store already holds {public} public documents")
        return
    click.echo(f"starting the store from the snapshot {location}")
    import_into_store(location, settings, url)


@snapshot.command("import")
@click.argument("location", required=False)
@click.option(
    "--once",
    is_flag=True,
    help="Leave the snapshot aside (and exit 0) when the store already holds public documents, and do nothing "
    "when no snapshot is named: for a step run at every start, as `secrag run` does with SECRAG_START_FROM.",
)
def import_command(location: str | None, once: bool) -> None:
    """Verify LOCATION (a snapshot file or https URL; default SECRAG_START_FROM) and load it into a fresh store
    in one transaction: declared sizes, checksums, schema version, model (SECRAG_EMBEDDING_MODEL, same weights)
    and, with SECRAG_SNAPSHOT_PUBLIC_KEY set, its signature (a URL needs one, unless
    SECRAG_SNAPSHOT_UNSIGNED_URLS); a row that is not public, a store with public documents or with a publish
    newer than the snapshot is refused."""
    settings = get_settings()
    location = location or settings.start_from
    if not location and once:  # a step run at every start (deploy/compose.yaml's migrate) with nothing to load
        click.echo("no snapshot to start from: SECRAG_START_FROM is unset")
        return
    if not location:
        raise ConfigError("no snapshot to import", hint="name a file or URL, or set SECRAG_START_FROM")
    url = database.database_url(settings)
    if once:
        start_from(settings, url, location)
    else:
        import_into_store(location, settings, url)


@snapshot.command("verify")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def verify_command(file: Path) -> None:
    """Check FILE as an import would, without a store: its signature (with SECRAG_SNAPSHOT_PUBLIC_KEY set), this
    release's schema version, the model (SECRAG_EMBEDDING_MODEL, same weights) and every part's sha256."""
    from pipeline.snapshot.loading import local_model, verify_snapshot

    settings = get_settings()
    model = local_model(settings.embedding_model, settings.models_dir)
    header = verify_snapshot(file, settings.sql_dir, model, settings.snapshot_public_key, settings.snapshot_max_bytes)
    manifest = header.manifest
    rows = manifest.rows()
    click.echo(
        f"snapshot {file} verified: schema version {manifest.schema_version}, model {model.id} ({model.digest}), "
        f"{len(manifest.sources)} sources, {rows['documents']} documents, {rows['chunks']} chunks"
        + (", signature verified" if header.signed else ", signature not checked (SECRAG_SNAPSHOT_PUBLIC_KEY unset)")
    )


@snapshot.command("public-key")
@click.argument("private_key", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def public_key(private_key: Path) -> None:
    """Print the SECRAG_SNAPSHOT_PUBLIC_KEY value that trusts snapshots signed with PRIVATE_KEY (ed25519 PEM)."""
    from pipeline.snapshot.signature import public_key_text

    click.echo(public_key_text(private_key))
