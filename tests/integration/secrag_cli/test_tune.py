"""`secrag tune report` on a real query log: per-class top scores, attention flags and content gaps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from psycopg.types.json import Jsonb

from secrag import database

SECRAG = [sys.executable, "-m", "secrag_cli.main"]
ROWS = [  # endpoint, query_type, query_text, top_score, result_count, attention
    ("search", "keyword", "quantum widget", None, 0, ["zero_results"]),
    ("plan", "keyword", "Quantum Widget", None, 0, ["zero_results"]),
    ("search", "technique", "T9999", 0.3, 2, ["low_score:0.300", "unknown_attack_ids:T9999"]),
    ("mcp:search", "technique", "T1003", 0.9, 5, []),
]


def test_the_report_summarises_classes_and_the_attention_log(db_url: str, tmp_path: Path) -> None:
    with database.connect(db_url, autocommit=True) as conn:
        for endpoint, query_type, text, top, count, attention in ROWS:
            conn.execute(
                "INSERT INTO query_log (endpoint, query_type, query_text, top_score, result_count, latency_ms,"
                " details, attention) VALUES (%s, %s, %s, %s, %s, 10, %s, %s)",
                [endpoint, query_type, text, top, count, Jsonb({}), attention],
            )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECRAG_") and k != "DATABASE_URL"}
    env["DATABASE_URL"] = db_url
    run = [*SECRAG, "tune", "report"]
    as_json = subprocess.run([*run, "--json"], env=env, cwd=tmp_path, capture_output=True, text=True, check=False)
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
    text = subprocess.run(run, env=env, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert text.returncode == 0, text.stderr
    assert "attention: 3 flagged queries" in text.stdout and "quantum widget" in text.stdout
