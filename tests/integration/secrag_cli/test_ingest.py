"""`secrag ingest add|remove|list` on a real store: files stored compressed with their ACL, clear errors."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import psycopg
import pytest

from secrag.db import database

SECRAG = [sys.executable, "-m", "secrag_cli.main", "ingest"]


def _run(db_url: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECRAG_") and k != "DATABASE_URL"}
    env["DATABASE_URL"] = db_url
    return subprocess.run([*SECRAG, *args], env=env, cwd=cwd, capture_output=True, text=True, check=False)


def test_add_list_replace_and_remove(db_url: str, tmp_path: Path) -> None:
    note = tmp_path / "ir-runbook.md"
    note.write_text("# Runbook\n\nIsolate the host, then collect memory (T1003).\n")
    added = _run(db_url, tmp_path, "add", str(note), "--name", "runbook", "--tenant", "acme", "--group", "ir")
    assert added.returncode == 0, added.stderr
    assert "stored ir-runbook.md as ingested_runbook" in added.stdout
    with database.connect(db_url) as conn:
        row = conn.execute("SELECT filename, tenant, acl_groups, content FROM ingested_documents").fetchone()
    assert row[:3] == ("ir-runbook.md", "acme", ["ir"]) and zlib.decompress(row[3]) == note.read_bytes()
    again = _run(db_url, tmp_path, "add", str(note), "--name", "runbook", "--public")
    assert again.returncode == 1 and "already stored as 'runbook'" in again.stderr and "--replace" in again.stderr
    assert _run(db_url, tmp_path, "add", str(note), "--name", "runbook", "--public", "--replace").returncode == 0
    listed = _run(db_url, tmp_path, "list")
    assert "runbook" in listed.stdout and "public" in listed.stdout  # replaced as public
    removed = _run(db_url, tmp_path, "remove", "runbook")
    assert removed.returncode == 0 and "marked ingested_runbook for removal" in removed.stdout
    assert "removal pending" in _run(db_url, tmp_path, "list").stdout
    assert _run(db_url, tmp_path, "remove", "runbook").returncode == 1  # already marked


def test_bad_input_is_refused_before_anything_is_stored(db_url: str, tmp_path: Path) -> None:
    good = tmp_path / "a.txt"
    good.write_text("some text")
    broken = tmp_path / "b.pdf"
    broken.write_bytes(b"%PDF-1.4 not really")
    empty = tmp_path / "c.txt"
    empty.write_text("")
    (tmp_path / "d.csv").write_text("a,b\n")
    cases = [
        (("add", str(good), "--name", "Bad Name"), "must be 1-48 lower-case"),
        (("add", str(broken), "--name", "b", "--public"), "unreadable PDF"),
        (("add", str(empty), "--name", "c", "--public"), "holds 0 bytes"),
        (("add", str(good), "--name", "a", "--public", "--max-bytes", "3"), "a one-time document holds 1 to 3"),
        # the rule and the words of folders.yaml (secrag/access.py), naming the option
        (("add", str(good), "--name", "a", "--user", "ann"), "--user: users and groups need a tenant"),
        (("add", str(good), "--name", "a", "--group", "ir"), "--group: users and groups need a tenant"),
        (("add", str(good), "--name", "a"), "--tenant: say who sees these documents"),
        (("add", str(good), "--name", "a", "--public", "--tenant", "acme"), "--public: public documents take no"),
        (("remove", "nothing"), "no one-time document 'nothing'"),
        (("add", str(tmp_path / "d.csv"), "--name", "d"), "not a supported format"),
        (("add", str(good), "--name", "a", "--tenant", " "), "take non-empty names"),
        (("add", str(good), "--name", "a", "--max-bytes", str(2**40)), "Invalid value for '--max-bytes'"),
    ]
    for args, message in cases:
        result = _run(db_url, tmp_path, *args)
        assert result.returncode in (1, 2) and message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    with database.connect(db_url) as conn:
        assert conn.execute("SELECT count(*) FROM ingested_documents").fetchone() == (0,)


def test_the_reader_role_cannot_read_the_stored_files(db_url: str, tmp_path: Path) -> None:
    note = tmp_path / "n.txt"
    note.write_text("private text")
    assert _run(db_url, tmp_path, "add", str(note), "--name", "n", "--tenant", "acme").returncode == 0
    with database.connect(db_url, autocommit=True) as conn:
        conn.execute("SET ROLE secrag_reader")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT content FROM ingested_documents")
