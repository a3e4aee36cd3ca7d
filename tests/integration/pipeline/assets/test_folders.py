"""`folders/<name>` against faults of the disk: a folder that cannot be listed whole changes nothing and is
recorded as a failed attempt naming the directories; an unreadable file keeps its document; only files that
are gone are removed (and announced removed by the change feed)."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.folders import FolderSpec
from pipeline.sources.mirror import Mirror
from tests.plugins.disk_faults import after_listing, before_listing, failing_open
from tests.plugins.graph import Harness, harness

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::DeprecationWarning:dagster")
KEY = "key:folders/team_docs"


@pytest.fixture
def served(tmp_path: Path, db_url: str, mirror: Mirror, small_specs) -> tuple[Harness, Path]:
    """team_docs published once: a.md, sub/b.md and sub/deeper/c.md."""
    root = tmp_path / "docs"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "a.md").write_text("# Alpha\nabout T1003.001\n")
    (root / "sub" / "b.md").write_text("# Bravo\nbravo text\n")
    (root / "sub" / "deeper" / "c.md").write_text("# Charlie\ncharlie text\n")
    spec = FolderSpec(name="team_docs", path=root.resolve(), tenant="acme")
    h = harness(db_url, mirror, tmp_path / "work", small_specs, folders=[spec])
    h.materialize(KEY)
    return h, root.resolve()


def _store(h: Harness) -> dict[str, object]:
    with h.connect() as conn:
        return {
            "documents": conn.execute(
                "SELECT doc_id, content_hash, body FROM documents WHERE source = 'team_docs' ORDER BY doc_id"
            ).fetchall(),
            "chunks": conn.execute("SELECT count(*) FROM chunks WHERE source = 'team_docs'").fetchone(),
            "changes": conn.execute(
                "SELECT doc_id, change FROM document_changes WHERE source = 'team_docs' ORDER BY id"
            ).fetchall(),
            "version": conn.execute("SELECT current_version FROM sources WHERE name = 'team_docs'").fetchone(),
        }


def _last_attempt(h: Harness) -> tuple:
    with h.connect() as conn:
        row = conn.execute(
            "SELECT status, phase, error_kind, error_detail, details FROM source_versions "
            "WHERE source = 'team_docs' ORDER BY id DESC LIMIT 1"
        ).fetchone()
    assert row is not None
    return row


def _replace_by_file(path: Path) -> Callable[[], None]:
    def fault() -> None:
        shutil.rmtree(path)
        path.write_text("a file now")

    return fault


def _remove(path: Path) -> Callable[[], None]:
    return lambda: shutil.rmtree(path)


def _eio(path: Path) -> Callable[[], None]:
    def fault() -> None:
        raise OSError(errno.EIO, "Input/output error", str(path))

    return fault


@pytest.mark.parametrize(
    ("where", "make_fault", "reason"),
    [
        ("sub", _replace_by_file, "Not a directory"),  # a directory replaced by a file mid-scan
        ("sub/deeper", _remove, "No such file or directory"),  # removed during the walk
        ("sub", _eio, "Input/output error"),  # a directory the disk cannot list
        (".", _eio, "Input/output error"),  # the folder itself (a stale mount)
    ],
)
def test_a_folder_that_cannot_be_listed_whole_changes_nothing(
    served, monkeypatch: pytest.MonkeyPatch, where: str, make_fault: Callable, reason: str
):
    h, root = served
    before = _store(h)
    target = (root / where).resolve()
    before_listing(monkeypatch, target, make_fault(target))
    failed = h.materialize(KEY, raise_on_error=False)
    assert not failed.success
    assert _store(h) == before  # every document served, nothing announced removed
    status, phase, kind, detail, details = _last_attempt(h)
    assert (status, phase, kind) == ("failed", "fetch", "fetch_failed")
    assert details == {"unlisted": {where: reason}} and f"{where} ({reason})" in detail
    [failure] = [e for e in failed.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failure.event_specific_data.user_failure_data.metadata["unlisted"].value == {where: reason}


def test_an_unreadable_file_keeps_its_document_and_only_gone_files_are_removed(served, monkeypatch: pytest.MonkeyPatch):
    h, root = served
    before = _store(h)
    (root / "a.md").unlink()  # really gone
    (root / "sub" / "b.md").write_text("# Bravo\nan edit nobody can read yet\n")
    os.mkfifo(root / "sub" / "pipe.md")  # never opened: the run does not hang on it
    failing_open(monkeypatch, root / "sub" / "b.md", OSError(errno.EACCES, "Permission denied"))
    after_listing(monkeypatch, root / "sub" / "deeper", lambda: (root / "sub" / "deeper" / "c.md").unlink())
    result = h.materialize(KEY)
    meta = {k: v.value for k, v in result.asset_materializations_for_node("folders__team_docs")[0].metadata.items()}
    assert (meta["kept"], meta["deleted"], meta["records"]) == (1, 2, 0)
    assert meta["file_errors"] == {
        "sub/pipe.md": "not a regular file (FIFO, device or socket)",
        "sub/b.md": "unreadable: Permission denied",
    }
    after = _store(h)
    [b] = [d for d in before["documents"] if d[0] == "team_docs:sub/b.md"]  # type: ignore[union-attr]
    assert after["documents"] == [b]  # its old text and hash, and its chunks below
    with h.connect() as conn:
        assert conn.execute("SELECT count(*) FROM chunks WHERE doc_id = 'team_docs:sub/b.md'").fetchone()[0] > 0
        removed = conn.execute(
            "SELECT doc_id FROM document_changes WHERE source = 'team_docs' AND change = 'removed' ORDER BY doc_id"
        ).fetchall()
        record_count = conn.execute("SELECT record_count FROM sources WHERE name = 'team_docs'").fetchone()[0]
    assert removed == [("team_docs:a.md",), ("team_docs:sub/deeper/c.md",)] and record_count == 1
    monkeypatch.undo()  # readable again: its new text is published
    (root / "sub" / "pipe.md").unlink()
    again = h.materialize(KEY)
    meta = {k: v.value for k, v in again.asset_materializations_for_node("folders__team_docs")[0].metadata.items()}
    assert (meta["kept"], meta["updated"], meta["records"]) == (0, 1, 1)
    with h.connect() as conn:
        body = conn.execute("SELECT body FROM documents WHERE doc_id = 'team_docs:sub/b.md'").fetchone()[0]
    assert "an edit nobody can read yet" in body


def test_an_unreadable_file_keeps_a_narrowed_access(
    served, monkeypatch: pytest.MonkeyPatch, db_url: str, mirror: Mirror, small_specs, tmp_path: Path
):
    h, root = served
    narrowed = FolderSpec(name="team_docs", path=root, tenant="acme", users=("alice",))
    h2 = harness(db_url, mirror, tmp_path / "work2", small_specs, folders=[narrowed])
    failing_open(monkeypatch, root / "sub" / "b.md", OSError(errno.EIO, "Input/output error"))
    (root / "sub" / "b.md").touch()  # its size and time change, so it is read again
    h2.materialize(KEY)
    with h2.connect() as conn:
        rows = conn.execute("SELECT DISTINCT tenant, acl_users FROM documents WHERE source = 'team_docs'").fetchall()
    assert rows == [("acme", ["alice"])]  # the kept document takes the folder's access too
