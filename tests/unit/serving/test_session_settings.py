"""No request changes a reader session's setting but hnsw.ef_search, through ReaderSessions.ef_search
(serving/access/sessions.py): every other set_config a serving statement makes is its transaction's, and no
serving code sends SET or RESET. The pool's reset is the guard behind this (tests/integration/serving/test_roles.py)."""

from __future__ import annotations

import re
from pathlib import Path

from secrag.files.package_data import sql_dir
from secrag.settings import REPO_ROOT

SESSION_SET_CONFIG = re.compile(r"set_config\(\s*'[^']*'\s*,[^,]*,\s*false\s*\)", re.IGNORECASE)
SET_STATEMENT = re.compile(r"""["']\s*(SET|RESET)\s+(?!LOCAL\b)[\w.]+(\s+(TO|=)|\s*["';])""")
SESSION_BLOCKS = {"session_settings", "search_ef"}  # ReaderSessions.configure and ReaderSessions.ef_search


def blocks(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in re.split(r"^-- name: ", text, flags=re.MULTILINE)[1:]:
        name, _, body = part.partition("\n")
        found[name.strip()] = body
    return found


def test_only_the_reader_sessions_blocks_change_a_session_setting() -> None:
    text = sql_dir().joinpath("queries", "serving.sql").read_text()  # the API's statements
    changing = {name for name, body in blocks(text).items() if SESSION_SET_CONFIG.search(body)}
    assert changing == SESSION_BLOCKS


def test_no_serving_code_sets_a_session_setting_itself() -> None:
    offenders = [
        f"{path.relative_to(REPO_ROOT)}: {match.group(0)}"
        for path in sorted(Path(REPO_ROOT, "serving").rglob("*.py"))
        for pattern in (SESSION_SET_CONFIG, SET_STATEMENT)
        for match in pattern.finditer(path.read_text())
    ]
    assert offenders == ['serving/access/sessions.py: "RESET ALL;']  # the pool's reset, and nothing else
