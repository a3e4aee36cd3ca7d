"""Crafted snapshots (their sizes and checksums right, signed where that matters) through `secrag snapshot
import`: rows that are not public (a tenant's document, a document planted in a user folder, a user folder's or
a one-time document's source, a part of another table), an unsigned snapshot from a loopback URL, an older one
replayed and a part declaring a huge size are refused with the part, row and reason, and the store is unchanged;
`secrag snapshot export` writes none of those rows and says how many it left out."""

from __future__ import annotations

import tarfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from pipeline.chunking import ChunkConfig
from pipeline.snapshot.loading import import_snapshot
from pipeline.snapshot.manifest import ModelFacts
from pipeline.snapshot.signature import public_key_text
from pipeline.sources.records import Record
from pipeline.store import Access, SourceRow, Store
from secrag.db import database
from tests.plugins.upstream import LoopbackPolicy, LoopbackServer

from .conftest import INGESTED, SQL_DIR
from .crafted import crafted_snapshot
from .test_cli import invoke, settings_env  # noqa: F401 - a fixture
from .test_refused import rewritten, state, target  # noqa: F401 - a fixture

PUBLIC_SOURCES = "kind <> 'user_folder'"
OF_PUBLIC = f"source IN (SELECT name FROM sources WHERE {PUBLIC_SOURCES})"
PUBLIC_ONLY = {  # what an export of the corpus store holds (its tenants' documents are of user folders)
    "sources": PUBLIC_SOURCES,
    "source_versions": f"status = 'published' AND {OF_PUBLIC}",
    "documents": OF_PUBLIC,
    "document_raw": f"doc_id IN (SELECT doc_id FROM documents WHERE {OF_PUBLIC})",
    "document_artefacts": OF_PUBLIC,
    "chunks": OF_PUBLIC,
    "embeddings": f"content_hash IN (SELECT content_hash FROM chunks WHERE {OF_PUBLIC})",
}
REFUSED = "error: the snapshot's parts/{}.copy holds a row that is not public: {} ({}); nothing was imported"


@pytest.fixture(scope="module")
def sign_key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    key = tmp_path_factory.mktemp("key") / "key.pem"
    key.write_bytes(
        ed25519.Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return key


@pytest.fixture(scope="module")
def first_sigma(source_store: str) -> str:
    with database.connect(source_store, autocommit=True) as conn:
        row = conn.execute("SELECT min(doc_id) FROM documents WHERE source = 'sigma'").fetchone()
    assert row is not None and row[0]
    return str(row[0])


def refused_by_cli(env: pytest.MonkeyPatch, conn: Any, url: str, location: str, **variables: str) -> str:  # noqa: ANN401
    """The output of `secrag snapshot import LOCATION` into the store at `url`: it fails and leaves it unchanged."""
    before = state(conn)
    code, out = invoke(env, url, "import", location, **variables)
    assert code == 1, out
    assert state(conn) == before
    return out


def test_a_tenants_document_is_refused_signed_or_not(
    source_store: str,
    model: ModelFacts,
    target: psycopg.Connection,  # noqa: F811
    db_url: str,
    settings_env: pytest.MonkeyPatch,  # noqa: F811
    sign_key: Path,
    first_sigma: str,
    tmp_path: Path,
) -> None:
    """The finding: a public source's document given a tenant and users would join that tenant's private view;
    a valid signature does not make it public."""
    tamper = [f"UPDATE documents SET tenant = 'acme', acl_users = '{{alice}}' WHERE doc_id = '{first_sigma}'"]
    for key in (None, sign_key):
        path = crafted_snapshot(
            source_store, model, tmp_path / f"tenant-{bool(key)}.tar", tamper=tamper, where=PUBLIC_ONLY, sign_key=key
        )
        trusted = {"SECRAG_SNAPSHOT_PUBLIC_KEY": public_key_text(key)} if key else {}
        out = refused_by_cli(settings_env, target, db_url, str(path), **trusted)
        assert REFUSED.format("documents", first_sigma, "tenant 'acme'") in out, out


def test_a_document_planted_in_a_user_folder_is_refused(
    source_store: str,
    model: ModelFacts,
    target: psycopg.Connection,  # noqa: F811
    db_url: str,
    settings_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The target store's user folder team_notes, given a public-looking document (no tenant) by a snapshot whose
    sources part does not hold the folder: the document is of no public source of the snapshot."""
    tamper = [
        "INSERT INTO sources (name, kind) VALUES ('team_notes', 'user_folder')",
        "INSERT INTO documents (doc_id, source, source_version, title, body, content_hash) "
        "VALUES ('team_notes:planted.md', 'team_notes', 'v1', 'Planted', 'A planted runbook.', 'planted')",
    ]
    where = PUBLIC_ONLY | {"documents": f"{OF_PUBLIC} OR source = 'team_notes'"}
    path = crafted_snapshot(source_store, model, tmp_path / "planted.tar", tamper=tamper, where=where)
    out = refused_by_cli(settings_env, target, db_url, str(path))
    assert (
        REFUSED.format("documents", "team_notes:planted.md", "of team_notes, not a public source of the snapshot")
        in out
    ), out


def test_a_public_documents_chunk_under_a_user_folder_is_refused(
    source_store: str,
    model: ModelFacts,
    target: psycopg.Connection,  # noqa: F811
    db_url: str,
    settings_env: pytest.MonkeyPatch,  # noqa: F811
    first_sigma: str,
    tmp_path: Path,
) -> None:
    """A chunk's source is what the search legs filter on: one moved under the store's user folder is refused."""
    tamper = [f"UPDATE chunks SET source = 'team_notes' WHERE chunk_id = '{first_sigma}#0'"]
    where = PUBLIC_ONLY | {"chunks": f"doc_id IN (SELECT doc_id FROM documents WHERE {OF_PUBLIC})"}
    path = crafted_snapshot(source_store, model, tmp_path / "moved.tar", tamper=tamper, where=where)
    out = refused_by_cli(settings_env, target, db_url, str(path))
    reason = "a chunk of a document that is not a public one of the snapshot, or under another source"
    assert REFUSED.format("chunks", f"{first_sigma}#0", reason) in out, out


@pytest.mark.parametrize(
    ("tamper", "where", "row", "reason"),
    [
        ([], {}, "acme_notes", "a user folder's source"),  # every row of the store, user folders and all
        (
            [
                f"UPDATE sources SET kind = 'online' WHERE name = '{INGESTED}'",
                f"UPDATE documents SET tenant = NULL WHERE source = '{INGESTED}'",
            ],
            PUBLIC_ONLY,
            INGESTED,
            "a one-time document's source (named ingested_...)",
        ),
    ],
    ids=["user-folders", "one-time"],
)
def test_a_private_source_is_refused(
    tamper: list[str],
    where: dict[str, str],
    row: str,
    reason: str,
    source_store: str,
    model: ModelFacts,
    target: psycopg.Connection,  # noqa: F811
    db_url: str,
    settings_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
) -> None:
    path = crafted_snapshot(source_store, model, tmp_path / "private.tar", tamper=tamper, where=where)
    out = refused_by_cli(settings_env, target, db_url, str(path))
    assert REFUSED.format("sources", row, reason) in out, out


def test_a_part_of_another_table_is_refused(
    snapshot_file: Path,
    target: psycopg.Connection,  # noqa: F811
    db_url: str,
    settings_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The query log (or any table but the parts') has no place in a snapshot."""

    def with_query_log(m: dict[str, Any]) -> None:
        m["parts"].append({**m["parts"][0], "table": "query_log", "member": "parts/query_log.copy"})

    out = refused_by_cli(settings_env, target, db_url, str(rewritten(snapshot_file, tmp_path, with_query_log)))
    assert "error: the snapshot's parts are sources, " in out and "query_log; expected sources," in out, out


def test_an_unsigned_snapshot_from_a_url_is_refused_before_its_download(
    snapshot_file: Path,
    target: psycopg.Connection,  # noqa: F811
    db_url: str,
    settings_env: pytest.MonkeyPatch,  # noqa: F811
    http_server: LoopbackServer,
    sign_key: Path,
) -> None:
    url = http_server.bytes("/store.tar", snapshot_file.read_bytes())
    out = refused_by_cli(settings_env, target, db_url, url)
    assert f"error: the snapshot {url} is named by URL and SECRAG_SNAPSHOT_PUBLIC_KEY is unset" in out, out
    assert "SECRAG_SNAPSHOT_UNSIGNED_URLS=true" in out, out
    assert http_server.requests == []

    # With a key, it is downloaded (the tests' policy allows loopback) and refused for its missing signature.
    settings_env.setattr("pipeline.snapshot.origin.UrlPolicy", LoopbackPolicy)
    out = refused_by_cli(settings_env, target, db_url, url, SECRAG_SNAPSHOT_PUBLIC_KEY=public_key_text(sign_key))
    assert "error: the snapshot is not signed, and SECRAG_SNAPSHOT_PUBLIC_KEY requires a signature" in out, out
    assert len(http_server.requests) == 1

    # An operator who accepts unsigned snapshots from URLs says so.
    settings_env.delenv("SECRAG_SNAPSHOT_PUBLIC_KEY")
    code, out = invoke(settings_env, db_url, "import", url, SECRAG_SNAPSHOT_UNSIGNED_URLS="true")
    assert code == 0 and "snapshot imported" in out and "signature not checked" in out, out


def test_an_older_signed_snapshot_is_not_replayed(
    source_store: str,
    model: ModelFacts,
    target: psycopg.Connection,  # noqa: F811
    db_url: str,
    settings_env: pytest.MonkeyPatch,  # noqa: F811
    sign_key: Path,
    tmp_path: Path,
) -> None:
    """A store that took a snapshot and then lost its public documents still holds its sources' publishes: a
    validly signed snapshot exported before them is refused; one exported after is taken."""
    trusted = {"SECRAG_SNAPSHOT_PUBLIC_KEY": public_key_text(sign_key)}
    now = datetime.now(UTC)
    current = crafted_snapshot(source_store, model, tmp_path / "current.tar", where=PUBLIC_ONLY, sign_key=sign_key)
    code, out = invoke(settings_env, db_url, "import", str(current), **trusted)
    assert code == 0 and "signature verified" in out, out
    target.execute("DELETE FROM documents WHERE source IN (SELECT name FROM sources WHERE kind <> 'user_folder')")
    newest = target.execute(
        f"SELECT source, finished_at FROM source_versions WHERE status = 'published' AND {OF_PUBLIC} "  # noqa: S608
        "ORDER BY finished_at DESC LIMIT 1"
    ).fetchone()
    assert newest is not None and newest[1] <= now

    old = crafted_snapshot(
        source_store,
        model,
        tmp_path / "old.tar",
        where=PUBLIC_ONLY,
        sign_key=sign_key,
        created_at=newest[1] - timedelta(days=30),
    )
    out = refused_by_cli(settings_env, target, db_url, str(old), **trusted)
    assert "error: the snapshot was exported at " in out, out
    assert f", before this store's publish of {newest[0]} at " in out, out
    assert "a snapshot older than what the store holds is refused" in out, out

    code, out = invoke(settings_env, db_url, "import", str(current), **trusted)
    assert code == 0 and "snapshot imported" in out, out


def test_a_part_declaring_a_huge_size_is_refused_before_it_is_read(
    snapshot_file: Path,
    target: psycopg.Connection,  # noqa: F811
    db_url: str,
    settings_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
) -> None:
    def declaring(size: int) -> Path:
        def change(m: dict[str, Any]) -> None:
            next(p for p in m["parts"] if p["table"] == "chunks")["bytes"] = size

        return rewritten(snapshot_file, tmp_path, change)

    huge = 2**62
    out = refused_by_cli(settings_env, target, db_url, str(declaring(huge)))
    assert f"error: the snapshot's parts/chunks.copy declares {huge} bytes, which takes its parts past " in out, out
    assert "(SECRAG_SNAPSHOT_MAX_BYTES); nothing of it was read" in out, out

    past_the_file = snapshot_file.stat().st_size + 1
    out = refused_by_cli(settings_env, target, db_url, str(declaring(past_the_file)))
    assert f"parts/chunks.copy declares {past_the_file} bytes; the whole file holds " in out, out

    with tarfile.open(snapshot_file) as tar:  # under a bound of its own, the real snapshot is refused too
        total = sum(m.size for m in tar.getmembers() if m.name.startswith("parts/"))
    out = refused_by_cli(settings_env, target, db_url, str(snapshot_file), SECRAG_SNAPSHOT_MAX_BYTES=str(total - 1))
    assert f"past {total - 1} bytes (SECRAG_SNAPSHOT_MAX_BYTES)" in out, out


def test_the_export_leaves_out_what_is_not_public(
    snapshot_file: Path,
    model: ModelFacts,
    db: psycopg.Connection,
    db_url: str,
    settings_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A store with a user folder and a tenant's document in a public source exports neither, and says so."""
    assert import_snapshot(db, SQL_DIR, snapshot_file, model).active_model == model.id
    store = Store(SQL_DIR)
    private = (("team_notes", "user_folder", "zanzibarfolder"), ("partner_feed", "online", "zanzibarpartner"))
    for name, kind, word in private:
        store.register_source(db, SourceRow(name=name, kind=kind, description=name))
        record = Record(source=name, upstream_id="a.md", title="Private", body=f"Codeword {word}.")
        store.publish(
            db, source=name, version="v1", records=[record], lookup={}, chunking=ChunkConfig(), access=Access("acme")
        )
    again = tmp_path / "again.tar"
    code, out = invoke(settings_env, db_url, "export", str(again))
    assert code == 0, out
    assert "left out 2 documents that are not public: 1 of user folders, 0 one-time, 1 with a tenant" in out, out
    data = again.read_bytes()
    assert b"zanzibarfolder" not in data and b"zanzibarpartner" not in data
    assert b"partner_feed" in data  # the source is public; its one document is not
