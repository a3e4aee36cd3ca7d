"""freshness.py --push's git server: a commit `git push`ed to a source's bare mirror repository runs its post-receive
hook (bench/lib/post_receive.py), which sends the repository's signed GitHub push webhook to the receiver; a poke
names the repository. Without the hook a push records nothing (the poll alone)."""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg

from pipeline.sources.mirror import Mirror
from tests.plugins.hooks_server import serve_hooks
from tests.plugins.mirror_changes import add_commit

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # bench/lib, as the scripts import it
from lib.upstream import GitServer  # noqa: E402

CHANGE = {"analytics/CAR-2013-01-002.yaml": None}


def test_a_push_to_the_git_server_sends_the_signed_webhook(
    db_url: str, db: psycopg.Connection, mirror: Mirror, tmp_path: Path
) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"car-secret\n")
    server = GitServer(mirror, "mitre_car", "mitre-attack/car", tmp_path / "clone")
    with serve_hooks(db_url, {"mitre-attack/car": "car-secret"}) as hooks:
        server.install_hook(hooks, secret)
        commit = add_commit(server.clone, "mitre_car", CHANGE, "a contributor's change")
        said = server.push(commit)
        assert "secrag hooks answered 202" in said, said
        assert mirror.head("mitre_car") == commit  # the server has the commit the webhook announced
        server.remove_hook()
        later = add_commit(server.clone, "mitre_car", {"analytics/CAR-2013-04-002.yaml": None}, "another")
        assert server.push(later) == ""
        assert mirror.head("mitre_car") == later
    rows = db.execute("SELECT hook, event FROM pokes ORDER BY id").fetchall()
    assert rows == [("mitre-attack/car", "push")]
