"""A git server's post-receive hook that sends GitHub's signed `push` webhook, one delivery per updated branch.

Its repository's git config names the receiver (`secrag.hookurl`: POST <hookurl>/hooks/github/<repository>), the
repository (`secrag.repository`) and a file holding its secret (`secrag.hooksecretfile`). The receiver's answer
goes to stderr, which the pusher sees as `remote:` lines (0: nothing answered; the sensor's poll still finds it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from processes import request  # bench/lib, this file's folder

from serving.hooks.signatures import sign


def config(key: str) -> str:
    return subprocess.run(["git", "config", "--get", key], check=True, capture_output=True, text=True).stdout.strip()


def main() -> None:
    repository = config("secrag.repository")
    url = f"{config('secrag.hookurl').rstrip('/')}/hooks/github/{repository}"
    secret = Path(config("secrag.hooksecretfile")).read_bytes().strip()
    for old, new, ref in (line.split() for line in sys.stdin if " refs/heads/" in line):  # branches, not tags
        fields = {"ref": ref, "before": old, "after": new, "created": old == "0" * 40, "deleted": new == "0" * 40}
        repo = {"full_name": repository, "name": repository.rsplit("/", 1)[-1]}
        body = json.dumps({**fields, "repository": repo}, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json", "X-GitHub-Event": "push", "X-GitHub-Delivery": str(uuid.uuid4())}
        status = request(url, body, {**headers, "X-Hub-Signature-256": sign(secret, body)})[0]
        sys.stderr.write(f"secrag hooks answered {status} for {ref}\n")


if __name__ == "__main__":
    main()
