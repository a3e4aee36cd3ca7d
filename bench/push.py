"""Push to searchable through the sensors: a Sigma rule pushed upstream, with and without a signed webhook.

Starts the production topology (`secrag run`: code server, webserver, daemon with its sensors, API) and the
webhook receiver (`secrag hooks`, SECRAG_HOOK_SECRETS holding the secret of SigmaHQ/sigma's webhook) on a fresh
data directory whose upstream mirror holds sigma and mitre_attack (whose technique lookup sigma's documents wait
for), and waits for convergence (bench/freshness.py). The mirror's bare sigma repository is the git server: its
post-receive hook (bench/post_receive.py) sends the signed GitHub `push` webhook. Then, one after the other:
- `--pushes` times: a new Sigma rule committed in a clone and `git push`ed to the server, whose hook sends the
  webhook; the time from the commit to the first probe that saw it, to the first full-text hit and to the first
  vector hit of the rule (the API);
- `--polls` times the same with the hook removed: the poll alone.
It prints p50 and max of each, and the receiver's /metrics counts (plus a forged, an unsigned and a replayed
delivery, which must change nothing). Everything started is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for the tests' mirror helpers
from pipeline.polling import poll_intervals  # noqa: E402
from pipeline.sources.git_fetch import run_git  # noqa: E402
from pipeline.sources.mirror import GIT_TIMEOUT, Mirror, build_mirror, mirror_env  # noqa: E402
from pipeline.sources.registry import default_registry  # noqa: E402
from secrag.db import database, embedded  # noqa: E402
from secrag.settings import Settings  # noqa: E402
from secrag_cli.processes import stop_group  # noqa: E402
from serving.hooks.signatures import sign  # noqa: E402
from tests.plugins.mirror_changes import _keep_head  # noqa: E402

from freshness import (  # noqa: E402
    SECRAG,
    _search,
    run_env,
    say,
    snapshot_of,
    start,
    wait_converged,
    wait_for,
    wait_healthy,
)
from lib.processes import free_port, get  # noqa: E402
from mirror_edits import new_sigma_rule  # noqa: E402

SOURCES = ["mitre_attack", "sigma"]
REPOSITORY = "SigmaHQ/sigma"  # sigma's webhook (SECRAG_HOOK_SECRETS's key and the receiver's path)
HOOK = Path(__file__).resolve().parent / "post_receive.py"


class GitServer:
    """A source's bare repository in the mirror as its upstream's git server, and a clone that pushes to it."""

    def __init__(self, mirror: Mirror, source: str, repository: str, work: Path) -> None:
        self.mirror, self.source, self.repository = mirror, source, repository
        self.server = mirror.git_dir(source)
        clone = work / "git" / self.server.name
        if not clone.exists():
            self.git("clone", "--bare", "--shared", str(self.server), str(clone))
        self.clone = replace(mirror, root=work)  # a change is committed here, as a contributor does

    def git(self, *args: str, git_dir: Path | None = None) -> str:
        env = mirror_env() if git_dir is None else mirror_env(GIT_DIR=str(git_dir))
        return run_git(args, timeout=GIT_TIMEOUT, env=env, what="bench git server").strip()

    def install_hook(self, hooks: str, secret_file: Path) -> None:
        """The post-receive hook (bench/post_receive.py) that sends the repository's signed push webhook."""
        settings = {"hookurl": hooks, "repository": self.repository, "hooksecretfile": str(secret_file)}
        for key, value in settings.items():
            self.git("config", f"secrag.{key}", value, git_dir=self.server)
        hook = self.server / "hooks" / "post-receive"
        hook.parent.mkdir(exist_ok=True)
        hook.write_text(f"#!/bin/sh\nexec {sys.executable} {HOOK}\n", encoding="utf-8")
        hook.chmod(0o755)

    def remove_hook(self) -> None:
        (self.server / "hooks" / "post-receive").unlink(missing_ok=True)

    def push(self, commit: str) -> str:
        """`git push` of the clone's commit to the server's branch: what the server's hook said (stderr)."""
        branch = f"refs/heads/{self.mirror.sources[self.source].branch}"
        env = mirror_env(GIT_DIR=str(self.clone.git_dir(self.source)))
        done = subprocess.run(
            ["git", "push", "--quiet", str(self.server), f"{commit}:{branch}"],
            env=env, capture_output=True, text=True, timeout=GIT_TIMEOUT, check=True,
        )  # fmt: skip
        _keep_head(self.mirror, self.mirror.sources[self.source].mirror_name, commit)  # so runs keep it
        return done.stderr.strip()


def deliver(hooks: str, secret: bytes, body: bytes, delivery: str, signature: str | None = None) -> int:
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "push", "X-GitHub-Delivery": delivery}
    signature = sign(secret, body) if signature is None else signature
    if signature:
        headers["X-Hub-Signature-256"] = signature
    request = urllib.request.Request(f"{hooks}/hooks/github/{REPOSITORY}", data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def one_change(server: GitServer, url: str, api: str, hooked: bool, timeout: float) -> dict[str, float]:
    """Seconds from the commit to the probe that saw it, the first full-text and the first vector hit."""
    token = uuid.uuid4().hex[:8]
    committed = time.time()
    title, commit = new_sigma_rule(server.clone, token)
    said = server.push(commit)
    if hooked:  # the server's post-receive hook sent the webhook during the push
        assert "answered 202" in said, f"the post-receive hook said: {said!r}"
    stamps: dict[str, float] = {}
    while len(stamps) < 3 and time.time() - committed < timeout:
        if "noticed" not in stamps:
            with database.connect(url) as conn:
                row = conn.execute("SELECT seen_since FROM sources WHERE name = 'sigma'").fetchone()
            if row and row[0] and row[0].timestamp() >= committed - 1:
                stamps["noticed"] = row[0].timestamp() - committed
        fts = "fts_hit" not in stamps and _search(api, "sigma", token, "fts")
        if fts and any(token in (r.get("title") or "") for r in fts):
            stamps["fts_hit"] = time.time() - committed
        if "vector_hit" not in stamps and any(r.get("title") == title for r in _search(api, "sigma", title, "vector")):
            stamps["vector_hit"] = time.time() - committed
        time.sleep(0.5)
    return stamps


def report(name: str, runs: list[dict[str, float]]) -> None:
    say(f"\n{name}: seconds from the commit, {len(runs)} changes")
    for stage in ("noticed", "fts_hit", "vector_hit"):
        values = [r[stage] for r in runs if stage in r]
        if len(values) < len(runs):
            say(f"  {stage:<11} {len(runs) - len(values)} of {len(runs)} never got there")
        if values:
            say(f"  {stage:<11} p50 {statistics.median(values):6.1f}  max {max(values):6.1f}")


def metrics(hooks: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{hooks}/metrics", timeout=10) as response:
        text = response.read().decode()
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith('secrag_hook_deliveries_total{outcome="'):
            label, value = line.split(" ")
            found[label.split('"')[1]] = float(value)
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path, required=True)
    ap.add_argument("--data-dir", type=Path, default=Path(".secrag/bench-push"))
    ap.add_argument("--pushes", type=int, default=10)
    ap.add_argument("--polls", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=7200.0, help="seconds to wait for convergence")
    ap.add_argument("--change-timeout", type=float, default=900.0, help="seconds to wait for one change")
    ap.add_argument("--model-cache-dir", type=Path, help="SECRAG_MODEL_CACHE_DIR (existing ONNX exports)")
    args = ap.parse_args()
    upstream, data_dir = args.upstream.resolve(), args.data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    snapshot = snapshot_of(upstream, SOURCES, data_dir / "snapshot")
    secret = secrets.token_hex(32).encode()
    env = run_env(data_dir, snapshot, args.model_cache_dir)
    env.update(SECRAG_HOOKS_ENABLED="true")
    env.update(SECRAG_SENTENCE_TRAINING="false")  # not what is measured: keeps the cores for the push path
    env["SECRAG_HOOK_SECRETS"] = json.dumps({REPOSITORY: secret.decode()})
    secret_file = data_dir / "sigma-webhook-secret"
    secret_file.write_bytes(secret)
    secret_file.chmod(0o600)
    settings = Settings(_env_file=None, data_dir=data_dir / "data", upstream_mirror=snapshot)
    specs = default_registry()
    ports = {"dagster": free_port(), "api": free_port(), "code": free_port(), "hooks": free_port()}
    dagster, api = f"http://127.0.0.1:{ports['dagster']}", f"http://127.0.0.1:{ports['api']}"
    hooks = f"http://127.0.0.1:{ports['hooks']}"
    proc = start(env, data_dir, ports)
    receiver: subprocess.Popen[bytes] | None = None
    say(f"secrag run on {data_dir} (Dagster {dagster}, API {api}; log run.log); sigma polled every "
        f"{poll_intervals(specs)['sigma']} s")  # fmt: skip
    try:
        wait_healthy(proc, dagster, api)
        log = (data_dir / "hooks.log").open("ab")
        receiver = subprocess.Popen(
            [*SECRAG, "hooks", "--port", str(ports["hooks"])], env=env, cwd=data_dir, stdout=log, stderr=log,
            start_new_session=True,
        )  # fmt: skip
        wait_for("the receiver", lambda: (get(f"{hooks}/healthz") == 200, "starting"), receiver, 120)
        url = wait_converged(proc, database.database_url(settings), dagster, SOURCES, args.timeout)
        mirror = build_mirror(snapshot, settings.data_dir / "mirrors", specs=specs)
        server = GitServer(mirror, "sigma", REPOSITORY, data_dir / "clone")
        server.install_hook(hooks, secret_file)
        pushed: list[dict[str, Any]] = []
        for i in range(args.pushes):
            pushed.append(one_change(server, url, api, True, args.change_timeout))
            say(f"  push {i + 1}: {pushed[-1]}")
        server.remove_hook()
        polled: list[dict[str, Any]] = []
        for i in range(args.polls):
            polled.append(one_change(server, url, api, False, args.change_timeout))
            say(f"  poll {i + 1}: {polled[-1]}")
        with database.connect(url) as conn:
            before = conn.execute("SELECT count(*) FROM pokes").fetchone()[0]
        body = b'{"ref":"refs/heads/master"}'
        refused = {
            "forged": deliver(hooks, b"not-the-secret", body, str(uuid.uuid4())),
            "unsigned": deliver(hooks, secret, body, str(uuid.uuid4()), signature=""),
        }
        first = str(uuid.uuid4())
        deliver(hooks, secret, body, first)
        refused["replayed"] = deliver(hooks, secret, body, first)
        with database.connect(url) as conn:
            after = conn.execute("SELECT count(*) FROM pokes").fetchone()[0]
        report("with the webhook", pushed)
        report("the poll alone", polled)
        say(f"\nrefused deliveries: {refused}; pokes recorded by them: {after - before - 1} (one good delivery)")
        say(f"receiver /metrics: {metrics(hooks)}")
    finally:
        if receiver is not None:
            stop_group(receiver, grace=10)
        stop_group(proc, grace=60)
        embedded.stop(settings.pgdata)
    return 0


if __name__ == "__main__":
    sys.exit(main())
