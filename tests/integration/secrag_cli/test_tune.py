"""`secrag tune report` on a real query log: per-class top scores, attention flags and content gaps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from psycopg.types.json import Jsonb

from secrag.db import database

SECRAG = [sys.executable, "-m", "secrag_cli.main"]
ROWS = [  # endpoint, query_type, query_text, top_score, result_count, attention
    ("search", "keyword", "quantum widget", None, 0, ["zero_results"]),
    ("plan", "keyword", "Quantum Widget", None, 0, ["zero_results"]),
    ("search", "technique", "T9999", 0.3, 2, ["low_score:0.300", "unknown_attack_ids:T9999"]),
    ("mcp:search", "technique", "T1003", 0.9, 5, []),
]


def _tune(db_url: str, cwd: Path, *args: str, answers: str | None = None) -> subprocess.CompletedProcess[str]:
    """`secrag tune ARGS` on the store at db_url, as a user runs it (answers on its standard input)."""
    return subprocess.run(
        [*SECRAG, "tune", *args], env=_env(db_url), cwd=cwd, input=answers, capture_output=True, text=True, check=False
    )


def _env(db_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECRAG_") and k != "DATABASE_URL"}
    env["DATABASE_URL"] = db_url
    return env


def test_the_report_summarises_classes_and_the_attention_log(db_url: str, tmp_path: Path) -> None:
    with database.connect(db_url, autocommit=True) as conn:
        for endpoint, query_type, text, top, count, attention in ROWS:
            conn.execute(
                "INSERT INTO query_log (endpoint, query_type, query_text, top_score, result_count, latency_ms,"
                " details, attention) VALUES (%s, %s, %s, %s, %s, 10, %s, %s)",
                [endpoint, query_type, text, top, count, Jsonb({}), attention],
            )
    as_json = _tune(db_url, tmp_path, "report", "--json")
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    classes = {c["query_class"]: c for c in report["classes"]}
    # Searches only (a plan's top score comes after its own threshold): the plan row is not counted.
    assert classes["keyword"]["count"] == 1 and classes["keyword"]["empty"] == 1 and classes["keyword"]["mean"] is None
    assert classes["technique"]["count"] == 2 and classes["technique"]["minimum"] == 0.3
    attention = report["attention"]
    assert attention["flagged"] == 3
    assert attention["kinds"] == {"zero_results": 2, "low_score": 1, "unknown_attack_ids": 1}
    assert attention["content_gaps"] == [["quantum widget", 2]]
    assert attention["unknown_attack_ids"] == {"T9999": 1}
    text = _tune(db_url, tmp_path, "report")
    assert text.returncode == 0, text.stderr
    assert "attention: 3 flagged queries" in text.stdout and "quantum widget" in text.stdout


def test_proposals_are_approved_one_by_one_then_rolled_back(db_url: str, tmp_path: Path) -> None:
    with database.connect(db_url, autocommit=True) as conn:
        for shape, count in (("technique", 40), ("cve", 30)):  # mitre_id and vulnerability queries
            for _ in range(count):
                conn.execute(
                    "INSERT INTO query_log (endpoint, query_type, top_score, result_count, latency_ms, details)"
                    " VALUES ('search', %s, 0.6, 5, 10, '{}')",
                    [shape],
                )
    report = _tune(db_url, tmp_path, "report", "--json")
    proposals = {p["query_type"]: p for p in json.loads(report.stdout)["proposals"]}
    assert set(proposals) == {"mitre_id", "vulnerability"}
    assert proposals["mitre_id"]["confidence"] > proposals["vulnerability"]["confidence"]  # 40 queries, not 30
    # Proposals come sorted by type: mitre_id is approved with its own reason, vulnerability is not.
    run = _tune(db_url, tmp_path, "apply", "--interactive", "--who", "ana", answers="y\ncheck of 2026-11\nn\n")
    assert run.returncode == 0, run.stderr
    assert "audit entry #1" in run.stdout and "confidence 0.44 (40 queries)" in run.stdout
    history = _tune(db_url, tmp_path, "history", "--json")
    [entry] = json.loads(history.stdout)
    assert (entry["who"], entry["query_type"], entry["reason"], entry["new"]) == (
        "ana",
        "mitre_id",
        "check of 2026-11",
        proposals["mitre_id"]["proposed"],
    )
    back = _tune(db_url, tmp_path, "rollback", "1", "--reason", "too strict")
    assert back.returncode == 0, back.stderr
    assert "(plans file) (rollback of #1, audit entry #2)" in back.stdout
    with database.connect(db_url) as conn:
        assert conn.execute("SELECT count(*) FROM tuned_value").fetchone() == (0,)
