"""A git server's post-receive hook that sends GitHub's signed `push` webhook, standard library only.

    git config secrag.hookurl http://127.0.0.1:8010     # the receiver (`secrag hooks`)
    git config secrag.repository SigmaHQ/sigma          # the hook's name: POST <hookurl>/hooks/github/<repository>
    git config secrag.hooksecretfile /path/to/secret    # the repository's webhook secret (SECRAG_HOOK_SECRETS)
    printf '#!/bin/sh\\nexec python3 /path/to/post_receive.py\\n' > hooks/post-receive; chmod +x hooks/post-receive

git runs it after a push with one `<old> <new> <ref>` line per updated ref on stdin; each updated branch is sent
as one delivery (a new X-GitHub-Delivery id, X-Hub-Signature-256 over the body), and the receiver's answer is
written to stderr, which the pusher sees as `remote:` lines. bench/push.py installs it on its upstream mirror.
"""

from __future__ import annotations

import argparse
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
    """A value of the repository's git config (the hook runs with GIT_DIR set)."""
    return subprocess.run(["git", "config", "--get", key], check=True, capture_output=True, text=True).stdout.strip()


def delivery(repository: str, old: str, new: str, ref: str) -> bytes:
    """The fields of GitHub's push payload a receiver reads."""
    body = {
        "ref": ref,
        "before": old,
        "after": new,
        "created": old == ZERO,
        "deleted": new == ZERO,
        "repository": {"full_name": repository, "name": repository.rsplit("/", 1)[-1]},
    }
    return json.dumps(body, separators=(",", ":")).encode()


def send(url: str, secret: bytes, body: bytes) -> int:
    signature = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "secrag-post-receive",
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": signature,
    }
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def main() -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    repository = config("secrag.repository")
    url = f"{config('secrag.hookurl').rstrip('/')}/hooks/github/{repository}"
    secret = Path(config("secrag.hooksecretfile")).read_bytes().strip()
    for line in sys.stdin:
        old, new, ref = line.split()
        if not ref.startswith("refs/heads/"):
            continue
        try:
            status = send(url, secret, delivery(repository, old, new, ref))
        except OSError as exc:  # the push has landed either way: the sensor's poll still finds it
            sys.stderr.write(f"secrag hooks: {ref} not delivered ({exc})\n")
            continue
        sys.stderr.write(f"secrag hooks answered {status} for {ref} at {new[:12]}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
