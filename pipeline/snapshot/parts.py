"""What a snapshot holds: its parts (one table each, public rows only), in the order an import loads them,
and each part's columns as the store has them."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql

from secrag.db.queries import Queries

from ..folders import INGESTED_PREFIX

# Load order: a row's references first. chunk_vectors, document_accesses and technique_documents are not
# parts: the store's triggers derive them from the chunks, documents and vectors as they are loaded.
PART_TABLES = (
    "sources",
    "source_versions",
    "mitre_techniques",
    "documents",
    "document_raw",
    "document_artefacts",
    "chunks",
    "embeddings",
)
# Left out on purpose: user folders and one-time documents, and any document with a tenant, users or groups
# (and their rows in every table above), the query log, tuning, the change feed, refresh history before each
# source's last publish, other models' vectors and the trained models (their weights are files on the
# exporting machine, not rows). An import refuses a part of any other table and any row that is not public.
PUBLIC = {"one_time_prefix": INGESTED_PREFIX}  # the parameters of every statement that says what is public


@dataclass(frozen=True)
class Column:
    """One stored column: its name and its type as format_type spells it."""

    name: str
    type: str


def table_columns(conn: psycopg.Connection, q: Queries, table: str) -> tuple[Column, ...]:
    """The stored columns of `table` (not generated, not identity), in table order."""
    rows = conn.execute(q.table_columns, {"table": f"public.{table}"}).fetchall()
    return tuple(Column(str(name), str(kind)) for name, kind in rows)


def column_list(columns: tuple[Column, ...]) -> sql.Composable:
    return sql.SQL(", ").join(sql.Identifier(c.name) for c in columns)


def public_statement(q: Queries, block: str, columns: tuple[Column, ...] = ()) -> sql.Composed:
    """The named block with its public sources and documents (and `columns`) filled in; run with PUBLIC."""
    sources = sql.SQL(q.public_source_names)
    documents = sql.SQL(q.public_document_ids).format(public_sources=sources)
    return sql.SQL(block).format(columns=column_list(columns), public_sources=sources, public_documents=documents)


def export_statement(q: Queries, table: str, columns: tuple[Column, ...]) -> sql.Composed:
    """The COPY ... TO STDOUT (FORMAT BINARY) of the part's public rows (run with PUBLIC)."""
    block = {
        "sources": q.export_sources,
        "source_versions": q.export_source_versions,
        "mitre_techniques": q.export_mitre_techniques,
        "documents": q.export_documents,
        "document_raw": q.export_document_raw,
        "document_artefacts": q.export_document_artefacts,
        "chunks": q.export_chunks,
        "embeddings": q.export_embeddings,
    }[table]
    return public_statement(q, block, columns)


def import_statement(q: Queries, table: str, columns: tuple[Column, ...]) -> sql.Composed:
    """The COPY ... FROM STDIN (FORMAT BINARY) loading the part into `table`."""
    return sql.SQL(q.copy_into).format(table=sql.Identifier(table), columns=column_list(columns))
