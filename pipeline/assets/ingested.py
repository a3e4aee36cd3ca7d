"""`ingested/documents` and `embeddings/ingested`: publish the one-time documents `secrag ingest` stored in
the database (pipeline/ingested.py), each as its own access-controlled source, and embed them; the
`ingested_documents` sensor starts a run when one is added, replaced or removed.

Runs of `ingested/documents` are serialised by an advisory lock and read the table only once they hold
it, so a slow run never publishes content, an ACL or a document that a later `secrag ingest` changed or
removed. A file that cannot be read is reported in the run's metadata and log; what it served stays
served and the other files still publish."""

import time
import zlib
from typing import Any

import dagster as dg

from secrag.db.queries import Queries
from secrag.errors import ParseError

from ..activation import activate_model_if_complete
from ..automation import on_new_inputs
from ..embedding import embed_pending
from ..ingested import Ingested, source_name
from ..resources import EmbedderResource, StoreResource
from ..store import SourceRow
from .embeddings import EMBEDDING_POOL
from .folders import FOLDER_READER_VERSION
from .keys import OWNERS

INGESTED_KEY = dg.AssetKey(["ingested", "documents"])
INGESTED_EMBEDDINGS_KEY = dg.AssetKey(["embeddings", "ingested"])
SENSOR_INTERVAL = 15  # seconds between two looks at the table
RUN_TAGS = {"secrag/source": "ingested"}  # one run at a time where the deployment limits runs per source
LOCK = "secrag.ingested"


def _rows(conn: Any, q: Queries) -> list[Ingested]:  # noqa: ANN401 - a psycopg connection
    return [
        Ingested(name, filename, sha, bytes(content), tenant, tuple(users), tuple(groups), removed is not None)
        for name, filename, sha, content, tenant, users, groups, removed in conn.execute(q.to_publish)
    ]


def build_ingested_assets(*, chunker_version: str, embed_code: str) -> list[dg.AssetsDefinition]:
    """The two assets; their code versions follow the reader and chunker (documents) and the embedding
    model and chunker (vectors), so automation redoes them when those change, as for every source."""

    @dg.asset(
        key=INGESTED_KEY,
        group_name="user_folders",
        owners=OWNERS,
        kinds={"python", "postgres"},
        code_version=f"{FOLDER_READER_VERSION}-{chunker_version}",
        automation_condition=on_new_inputs(),
        tags=RUN_TAGS,
        description="One-time documents stored with `secrag ingest add FILE --name NAME` (each published as "
        "the source ingested_<name> with its own tenant and ACL); `secrag ingest remove NAME` unpublishes one.",
    )
    def ingested_documents(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
        started = time.monotonic()
        db = store.store()
        q = Queries(store.sql_path(), "ingest")
        published, removed, failed = 0, 0, {}
        with store.connect() as conn:
            conn.execute(q.lock, {"key": LOCK})  # one run at a time, reading the table once it holds the lock
            try:
                lookup = db.technique_names(conn)
                for doc in _rows(conn, q):
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
                    except (ParseError, zlib.error) as exc:  # the others still publish
                        failed[doc.name] = exc.reason if isinstance(exc, ParseError) else f"corrupt content: {exc}"
                        context.log.warning(f"{doc.source}: {failed[doc.name]}; what it served stays served")
                        continue
                    db.register_source(
                        conn,
                        SourceRow(
                            name=doc.source, kind="user_folder", category="user", description=f"ingested {doc.filename}"
                        ),
                    )
                    result = db.publish(
                        conn, source=doc.source, version=doc.sha256[:16], records=[record], lookup=lookup,
                        chunking=store.chunking(), access=doc.access, max_shrink=1.0,
                    )  # fmt: skip
                    context.log.info(f"{doc.source}: {result.status} ({doc.filename})")
                    published += 1
            finally:
                conn.execute(q.unlock, {"key": LOCK})
        return dg.MaterializeResult(
            metadata={
                "published": published,
                "removed": removed,
                "unreadable": dg.MetadataValue.json(failed),
                "seconds": round(time.monotonic() - started, 3),
            }
        )

    @dg.asset(
        key=INGESTED_EMBEDDINGS_KEY,
        deps=[INGESTED_KEY],
        group_name="user_folders",
        owners=OWNERS,
        kinds={"onnx", "postgres"},
        pool=EMBEDDING_POOL,
        code_version=embed_code,
        automation_condition=on_new_inputs(),
        tags=RUN_TAGS,
        description="Vectors of the one-time documents' chunks for the configured embedding model.",
    )
    def ingested_embeddings(
        context: dg.AssetExecutionContext, store: StoreResource, embedder: EmbedderResource
    ) -> dg.MaterializeResult:
        model = embedder.embedder()
        embedded = 0
        with store.connect() as conn:
            q = Queries(store.sql_path(), "ingest")
            names = [source_name(name) for (name,) in conn.execute(q.stored_names).fetchall()]
            for (source,) in conn.execute(q.registered, {"names": names}).fetchall():
                stats = embed_pending(conn, model, store.sql_path(), source=source, batch_size=embedder.write_batch)
                embedded += stats.embedded
            activation = activate_model_if_complete(conn, store.sql_path(), model.model_id)
        if activation.switched:
            context.log.info(f"embedding model {model.model_id} now serves every chunk: activated")
        context.log.info(f"one-time documents: embedded {embedded} chunks")
        return dg.MaterializeResult(metadata={"model": model.model_id, "embedded": embedded})

    return [ingested_documents, ingested_embeddings]


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
    request = dg.RunRequest(run_key=f"ingested-{fingerprint}", tags=RUN_TAGS)
    return dg.SensorResult(run_requests=[request], cursor=fingerprint)
