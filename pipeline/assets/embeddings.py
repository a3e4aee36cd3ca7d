"""`embeddings/<source>`: vectors for the chunks of a source lacking one for the configured model."""

from collections.abc import Callable
from typing import Any

import dagster as dg
import psycopg

from ..activation import activate_model_if_complete
from ..automation import on_new_inputs
from ..embedding import embed_pending
from ..resources import EmbedderResource, StoreResource
from ..training.promotion import SOURCES as TRAINING_SOURCES
from ..training.promotion import promoted
from .keys import OWNERS, embeddings_key
from .stages import run_times, stage_metadata

LOG_EVERY = 2000  # chunks between progress lines


def embeddings_code_version(model: str, chunker_version: str) -> str:
    """Changes when the model or the chunker changes: both change every vector."""
    return f"{model}|chunker {chunker_version}"


# One embedding step at a time across all runs (dagster.yaml: concurrency.pools.default_limit 1): the
# encoder uses one onnxruntime thread per core, so two steps at once would oversubscribe the CPU.
EMBEDDING_POOL = "embedding"


def build_embeddings_asset(source: str, parent: dg.AssetKey, *, group: str, code_version: str) -> dg.AssetsDefinition:
    """Embed the pending chunks of one source, then switch the served model if the new one is complete."""

    @dg.asset(
        key=embeddings_key(source),
        deps=[parent],
        group_name=group,
        code_version=code_version,
        automation_condition=on_new_inputs(),
        owners=OWNERS,
        kinds={"onnx", "postgres"},
        tags={"secrag/source": source},
        pool=EMBEDDING_POOL,
        description=f"Vectors of every chunk of {source} for the configured embedding model. Unchanged "
        "chunk texts reuse their vectors; the served model switches only once the new one "
        "covers every chunk of every source.",
    )
    def _embed(
        context: dg.AssetExecutionContext, store: StoreResource, embedder: EmbedderResource
    ) -> dg.MaterializeResult:
        model = embedder.embedder()
        last = [0]

        def progress(done: int, total: int) -> None:
            if done - last[0] >= LOG_EVERY or done == total:
                last[0] = done
                context.log.info(f"{source}: embedded {done}/{total} chunks")

        with store.connect() as conn:
            stats = embed_pending(
                conn,
                model,
                store.sql_path(),
                source=source,
                batch_size=embedder.write_batch,
                progress=progress,
            )
            activation = activate_model_if_complete(conn, store.sql_path(), model.model_id)
            sentence = sentence_model_vectors(conn, store, embedder, source, progress)
        if activation.switched:
            context.log.info(f"embedding model {model.model_id} now serves every chunk: activated")
        return dg.MaterializeResult(
            metadata={
                "model": model.model_id,
                "chunks": stats.chunks,
                "embedded": stats.embedded,
                "reused": stats.reused,
                "seconds": round(stats.seconds, 3),
                "chunks_per_second": round(stats.chunks_per_second, 1),
                **{f"embed_seconds_{phase}": seconds for phase, seconds in stats.phases.items()},
                "active_model": activation.active or "",
                "model_switched": activation.switched,
                "chunks_missing_model_all_sources": max(activation.missing, 0),
                **sentence,
                **stage_metadata(run_times(context), "embedded"),
            }
        )

    return _embed


def sentence_model_vectors(
    conn: psycopg.Connection,
    store: StoreResource,
    embedder: EmbedderResource,
    source: str,
    progress: Callable[[int, int], None],
) -> dict[str, Any]:
    """A source whose chunks the promoted sentence model serves (pipeline/training) gets that model's vectors of
    its new chunks too, so the sentence path stays whole between a publish and the next training."""
    if source not in TRAINING_SOURCES:
        return {}
    current = promoted(conn, store.sql_path())
    if current is None:
        return {}
    stats = embed_pending(
        conn,
        embedder.for_model(current.served_model),
        store.sql_path(),
        source=source,
        batch_size=embedder.write_batch,
        progress=progress,
    )
    return {"sentence_model": current.served_model, "sentence_model_embedded": stats.embedded}
