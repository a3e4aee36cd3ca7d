"""`ingested/documents` and `embeddings/ingested`: publish the one-time documents `secrag ingest` stored in
the database (pipeline/ingested.py), each as its own access-controlled source, and embed them; the
`ingested_documents` sensor starts a run when one is added, replaced or removed."""

import time
from typing import Any

import dagster as dg

from secrag.errors import ParseError
from secrag.queries import Queries

from ..activation import activate_model_if_complete
from ..automation import on_new_inputs
from ..embedding import embed_pending
from ..ingested import Ingested
from ..resources import EmbedderResource, StoreResource
from ..store import SourceRow
from .embeddings import EMBEDDING_POOL
from .keys import OWNERS

INGESTED_KEY = dg.AssetKey(["ingested", "documents"])
INGESTED_EMBEDDINGS_KEY = dg.AssetKey(["embeddings", "ingested"])
SENSOR_INTERVAL = 15  # seconds between two looks at the table


def _rows(conn: Any, q: Queries) -> list[Ingested]:  # noqa: ANN401 - a psycopg connection
    return [
        Ingested(name, filename, sha, bytes(content), tenant, tuple(users), tuple(groups), removed is not None)
        for name, filename, sha, content, tenant, users, groups, removed in conn.execute(q.to_publish)
    ]


@dg.asset(
    key=INGESTED_KEY,
    group_name="user_folders",
    owners=OWNERS,
    kinds={"python", "postgres"},
    description="One-time documents stored with `secrag ingest add FILE --name NAME` (each published as the "
    "source ingested_<name> with its own tenant and ACL); `secrag ingest remove NAME` unpublishes one.",
)
def ingested_documents(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    started = time.monotonic()
    db = store.store()
    q = Queries(store.sql_path(), "ingest")
    published, removed, failed = 0, 0, {}
    with store.connect() as conn:
        lookup = db.technique_names(conn)
        for doc in _rows(conn, q):
            db.register_source(
                conn,
                SourceRow(name=doc.source, kind="user_folder", category="user", description=f"ingested {doc.filename}"),
            )
            if doc.removed:
                db.publish(
                    conn, source=doc.source, version="removed", records=[], lookup=lookup,
                    chunking=store.chunking(), access=doc.access, force=True,
                )  # fmt: skip
                conn.execute(q.forget, {"name": doc.name})
                context.log.info(f"{doc.source}: removed")
                removed += 1
                continue
            try:
                record = doc.record()
            except ParseError as exc:  # stored by an older release, or corrupted: the rest still publish
                failed[doc.name] = exc.reason
                context.log.warning(f"{doc.source}: {exc.reason}; what it served stays served")
                continue
            result = db.publish(
                conn, source=doc.source, version=doc.sha256[:16], records=[record], lookup=lookup,
                chunking=store.chunking(), access=doc.access, max_shrink=1.0,
            )  # fmt: skip
            context.log.info(f"{doc.source}: {result.status} ({doc.filename})")
            published += 1
    if failed:
        raise dg.Failure(f"{len(failed)} one-time documents could not be read", metadata={"errors": failed})
    return dg.MaterializeResult(
        metadata={"published": published, "removed": removed, "seconds": round(time.monotonic() - started, 3)}
    )


@dg.asset(
    key=INGESTED_EMBEDDINGS_KEY,
    deps=[INGESTED_KEY],
    group_name="user_folders",
    owners=OWNERS,
    kinds={"onnx", "postgres"},
    pool=EMBEDDING_POOL,
    automation_condition=on_new_inputs(),
    description="Vectors of the one-time documents' chunks for the configured embedding model.",
)
def ingested_embeddings(
    context: dg.AssetExecutionContext, store: StoreResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    model = embedder.embedder()
    embedded = 0
    with store.connect() as conn:
        for doc in _rows(conn, Queries(store.sql_path(), "ingest")):
            if not doc.removed:
                stats = embed_pending(conn, model, store.sql_path(), source=doc.source, batch_size=embedder.write_batch)
                embedded += stats.embedded
        activate_model_if_complete(conn, store.sql_path(), model.model_id)
    context.log.info(f"one-time documents: embedded {embedded} chunks")
    return dg.MaterializeResult(metadata={"model": model.model_id, "embedded": embedded})


@dg.sensor(
    name="ingested_documents",
    asset_selection=[INGESTED_KEY, INGESTED_EMBEDDINGS_KEY],
    minimum_interval_seconds=SENSOR_INTERVAL,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Starts a run when `secrag ingest` adds, replaces or removes a one-time document.",
)
def ingested_sensor(context: dg.SensorEvaluationContext, store: StoreResource) -> dg.SensorResult:
    with store.connect() as conn:
        row = conn.execute(Queries(store.sql_path(), "ingest").fingerprint).fetchone()
    fingerprint = str(row[0]) if row else ""
    if fingerprint == (context.cursor or ""):
        return dg.SensorResult(skip_reason="no one-time document changed")
    return dg.SensorResult(run_requests=[dg.RunRequest(run_key=f"ingested-{fingerprint}")], cursor=fingerprint)
