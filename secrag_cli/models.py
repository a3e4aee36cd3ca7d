"""`secrag models ...`: the embedding models in the store, pruning those no longer configured, fetching a hub
model's weights once, exporting models to ONNX, and the trained sentence models (listing, promoting, rolling
back)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click
import psycopg

from pipeline.model_store import prunable, prune_model, stored_models
from secrag.db import database
from secrag.models.registry import TRAINED_DIR, model_info, registry, trained_folders
from serving.settings import ServingSettings

from .errors import SecragGroup


@click.group(cls=SecragGroup)
def models() -> None:
    """Embedding models: their vectors in the store, removing the ones no longer configured, fetching and
    exporting weights, and promoting a trained sentence model."""


def _kept(settings: ServingSettings) -> set[str]:
    """The configured models: the pipeline's (SECRAG_EMBEDDING_MODEL) and the API's (SECRAG_SERVING_MODEL)."""
    return {m for m in (settings.embedding_model, settings.serving_model) if m}


@models.command("list")
def list_models() -> None:
    """Each model in the store: dimensions, vectors, active (searched), configured."""
    settings = ServingSettings()
    url = database.database_url(settings)
    from pipeline.training.promotion import kept_models

    kept = _kept(settings)
    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        stored = stored_models(conn, settings.sql_dir)
        sentence = kept_models(conn, settings.sql_dir)  # the sentence model's, and its rollback's
    click.echo(f"{'model':28} {'dims':>5} {'vectors':>9}  state")
    for m in stored:
        states = (("active", m.active), ("configured", m.model_id in kept), ("sentence model", m.model_id in sentence))
        state = ", ".join(s for s, on in states if on)
        click.echo(f"{m.model_id:28} {m.dimensions:>5} {m.vectors:>9}  {state or 'not configured (prunable)'}")
    others = sorted(set(registry().ids()) - {m.model_id for m in stored})
    if others:
        click.echo(f"registered, not in the store: {', '.join(others)}")


@models.command()
@click.option("--yes", is_flag=True, help="Remove them (default: only list what would go).")
def prune(yes: bool) -> None:
    """Remove the vectors, index and row of every model that is neither active nor configured."""
    settings = ServingSettings()
    url = database.database_url(settings)
    from pipeline.training.promotion import kept_models

    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        kept = _kept(settings) | kept_models(conn, settings.sql_dir)  # the sentence model's, and its rollback's
        doomed = prunable(stored_models(conn, settings.sql_dir), kept)
        if not doomed:
            click.echo("nothing to prune: every model in the store is active or configured")
            return
        for m in doomed:
            if yes:
                removed = prune_model(conn, settings.sql_dir, m.model_id)
                click.echo(f"pruned {m.model_id}: {removed} vectors and its index")
            else:
                click.echo(f"would prune {m.model_id}: {m.vectors} vectors and its index")
    if not yes:
        click.echo("run again with --yes to remove them")


@models.command()
@click.option(
    "--model",
    "model_ids",
    multiple=True,
    help="Registered model id (repeatable; default: the configured ones, SECRAG_EMBEDDING_MODEL and "
    "SECRAG_SERVING_MODEL).",
)
def export(model_ids: tuple[str, ...]) -> None:
    """Export models to ONNX in the model cache (SECRAG_MODEL_CACHE_DIR), from their local weights with no
    network; each file is checksummed. The container image runs this at build time."""
    from secrag.models.onnx_export import export_onnx, file_sha256

    settings = ServingSettings()
    wanted = list(model_ids) or sorted(_kept(settings))
    for model_id in wanted:
        model_info(model_id)  # ConfigError naming the known models, before any export starts
    for model_id in wanted:
        path = export_onnx(model_id, settings.models_dir)
        click.echo(f"{model_id}: {path} (sha256 {file_sha256(path)[:16]}…)")


@models.command()
@click.argument("model_id")
def fetch(model_id: str) -> None:
    """Download a hub model's files (those its registry entry lists) into the models folder, each checked
    against the entry's sha256; files already there and intact are kept. The only command that downloads
    a model: the pipeline, the API and `secrag models export` read weights from this machine only."""
    from secrag.models.fetch import fetch_model, hub_policy
    from secrag.net.url_policy import UrlPolicy
    from secrag.settings import Settings

    settings = Settings()
    policy = hub_policy(UrlPolicy.from_settings(settings), settings.models_hub_url)
    report = fetch_model(model_info(model_id), settings.models_dir, policy, settings.models_hub_url)
    click.echo(f"{model_id}: {report.folder} ({len(report.fetched)} files fetched, {len(report.kept)} already there)")


@models.command("index-source")
@click.argument("sources", nargs=-1)
@click.option(
    "--min-chunks", type=click.IntRange(min=1), default=None, help="Index every source with at least this many chunks."
)
@click.option("--drop", is_flag=True, help="Drop the sources' own indexes instead.")
@click.option(
    "--maintenance-work-mem",
    default="1GB",
    show_default=True,
    help="Memory for each build (PostgreSQL's maintenance_work_mem): enough keeps the graph in memory "
    "(docs/scaling.md sizes it); with less the build spills and takes many times longer.",
)
def index_source(sources: tuple[str, ...], min_chunks: int | None, drop: bool, maintenance_work_mem: str) -> None:
    """Give SOURCES (or every source of --min-chunks chunks) an HNSW index of their own for the active model,
    so that a search filtered to one of them walks its graph alone (docs/scaling.md: one-source filters at
    a million chunks). Built without blocking writes; a publish keeps it current."""
    from pipeline.model_store import create_source_index, drop_source_index, source_chunks

    settings = ServingSettings()
    url = database.database_url(settings)
    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        active = [m for m in stored_models(conn, settings.sql_dir) if m.active]
        if not active:
            raise click.UsageError("no active embedding model in the store yet (run the pipeline first)")
        model = active[0]
        chunks = source_chunks(conn, settings.sql_dir)
        chosen = list(sources) + [s for s, n in chunks.items() if min_chunks and n >= min_chunks]
        unknown = sorted(set(chosen) - set(chunks))
        if unknown or not chosen:
            known = ", ".join(sorted(chunks))
            raise click.UsageError(
                f"unknown sources: {', '.join(unknown)} (known: {known})" if unknown else "name sources or --min-chunks"
            )
        for source in dict.fromkeys(chosen):
            if drop:
                done = drop_source_index(conn, settings.sql_dir, model.model_id, source)
                click.echo(f"{source}: {'dropped' if done else 'had no index of its own'}")
            else:
                done = create_source_index(
                    conn, settings.sql_dir, model.model_id, model.dimensions, source, maintenance_work_mem
                )
                click.echo(
                    f"{source}: {'indexed' if done else 'already indexed'} ({chunks[source]} chunks, {model.model_id})"
                )


def _figure(validation: Mapping[str, Any], baseline: Mapping[str, Any], key: str) -> str:
    mine, theirs = validation.get(key), baseline.get(key)
    if mine is None:
        return "-"
    return f"{mine:.3f} vs {theirs:.3f}" if theirs is not None else f"{mine:.3f}"


@models.command("trained")
def list_trained() -> None:
    """The trained sentence models in the store: status, quality gate, base model, ATT&CK version, the vote's
    nDCG@10 and P@1 on the validation examples against the model each was compared with, and when trained."""
    from pipeline.training.promotion import trained

    settings = ServingSettings()
    url = database.database_url(settings)
    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        rows = trained(conn, settings.sql_dir)
    header = (
        f"{'model':28} {'status':9} {'passed':6} {'base':22} {'ATT&CK':8} {'vote nDCG@10':15} {'vote P@1':15} trained"
    )
    click.echo(header)
    for m in rows:
        click.echo(
            f"{m.model_id:28} {m.status:9} {'yes' if m.passed else 'no':6} {m.base_model:22} "
            f"{m.attack_version or '-':8} {_figure(m.validation, m.baseline, 'vote_ndcg10'):15} "
            f"{_figure(m.validation, m.baseline, 'vote_p1'):15} "
            f"{m.trained_at:%Y-%m-%d %H:%M}"
        )
    serving = next((m for m in rows if m.status == "promoted"), None)
    if serving is None:
        click.echo("the sentence path: the general model (no trained model is promoted)")
    else:
        click.echo(f"the sentence path: {serving.served_model} (promoted {serving.promoted_at:%Y-%m-%d %H:%M})")
    on_disk = sorted({f.name for f in trained_folders(settings.models_dir)} - {m.model_id for m in rows})
    if on_disk:
        click.echo(f"in {settings.models_dir / TRAINED_DIR}, not recorded in the store: {', '.join(on_disk)}")


EMBED_HELP = "First embed the ATT&CK chunks lacking a vector of the model that is to serve (what is checked)."


@models.command()
@click.argument("model_id")
@click.option("--force", is_flag=True, help="Promote a model that did not pass its quality gate.")
@click.option("--embed", is_flag=True, help=EMBED_HELP)
def promote(model_id: str, force: bool, embed: bool) -> None:
    """Make the trained model MODEL_ID serve the sentence path (the one promoted before it is retired). Refused
    unless its served model's vectors cover every ATT&CK chunk (--embed completes them first), and, without
    --force, unless it passed its quality gate."""
    from pipeline.training.promotion import promote as promote_model
    from pipeline.training.promotion import trained

    settings = ServingSettings()
    url = database.database_url(settings)
    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        if embed:
            row = next((m for m in trained(conn, settings.sql_dir) if m.model_id == model_id), None)
            if row is not None:  # an unrecorded model is refused by promote, naming the recorded ones
                _embed_missing(conn, settings, row.served_model)
        done = promote_model(conn, settings.sql_dir, model_id, force=force)
    if not done.changed:
        click.echo(f"{model_id} is already promoted: the sentence path serves {done.served_model}")
        return
    click.echo(
        f"promoted {model_id}: the sentence path serves {done.served_model} "
        f"(was {done.previous or 'the general model'})"
    )


@models.command()
@click.option("--embed", is_flag=True, help=EMBED_HELP)
def rollback(embed: bool) -> None:
    """Retire the promoted trained model: the one promoted before it serves the sentence path again, or, when
    there is none, the general model. Refused, as promote is, when the one promoted again lacks vectors of ATT&CK
    chunks (--embed completes them first)."""
    from pipeline.training.promotion import rollback as roll_back
    from pipeline.training.promotion import rollback_target

    settings = ServingSettings()
    url = database.database_url(settings)
    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        target = rollback_target(conn, settings.sql_dir) if embed else None
        if target is not None:
            _embed_missing(conn, settings, target.served_model)
        done = roll_back(conn, settings.sql_dir)
    now = f"{done.promoted} ({done.served_model})" if done.promoted else "the general model"
    click.echo(f"rolled back {done.previous}: the sentence path serves {now}")


def _embed_missing(conn: psycopg.Connection, settings: ServingSettings, model_id: str) -> None:
    """Embed the ATT&CK chunks lacking a vector of `model_id` (the encoder's threads: one per core)."""
    from pipeline.training.promotion import embed_missing
    from secrag.models.encoders import document_encoder

    encoder = document_encoder(model_id, batch_size=64, threads=0, cache_dir=settings.models_dir)
    embedded = embed_missing(conn, settings.sql_dir, encoder)
    click.echo(f"embedded {embedded} chunks with {model_id}")
