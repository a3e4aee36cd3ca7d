"""A git server's post-receive hook that sends GitHub's signed `push` webhook (freshness.py --push installs it).

Its repository's git config names the receiver (`secrag.hookurl`, `secrag hooks`), the hook's repository
(`secrag.repository`: POST <hookurl>/hooks/github/<repository>) and a file holding its secret
(`secrag.hooksecretfile`, as in SECRAG_HOOK_SECRETS). Each updated branch on stdin (`<old> <new> <ref>`) is one
delivery; the receiver's answer goes to stderr, which the pusher sees as `remote:` lines.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

ZERO = "0" * 40


def config(key: str) -> str:
    return subprocess.run(["git", "config", "--get", key], check=True, capture_output=True, text=True).stdout.strip()


def send(url: str, secret: bytes, repository: str, old: str, new: str, ref: str) -> int:
    """One delivery of the push payload's fields a receiver reads; the receiver's status."""
    repo = {"full_name": repository, "name": repository.rsplit("/", 1)[-1]}
    fields = {"ref": ref, "before": old, "after": new, "created": old == ZERO, "deleted": new == ZERO}
    body = json.dumps({**fields, "repository": repo}, separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest(),
    }
    try:
        with urllib.request.urlopen(urllib.request.Request(url, body, headers, method="POST"), timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def main() -> None:
    repository = config("secrag.repository")
    url = f"{config('secrag.hookurl').rstrip('/')}/hooks/github/{repository}"
    secret = Path(config("secrag.hooksecretfile")).read_bytes().strip()
    for old, new, ref in (line.split() for line in sys.stdin):
        if ref.startswith("refs/heads/"):
            try:  # the push has landed either way: the sensor's poll still finds it
                sys.stderr.write(f"secrag hooks answered {send(url, secret, repository, old, new, ref)} for {ref}\n")
            except OSError as exc:
                sys.stderr.write(f"secrag hooks: {ref} not delivered ({exc})\n")


if __name__ == "__main__":
    main()
