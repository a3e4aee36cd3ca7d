"""One upstream change per source, made in a built mirror as upstream would make it (refresh_work.py, freshness.py,
push.py): a new Sigma rule, Stratus Red Team technique or KEV entry, and for every other source one touched record,
a run of words of a published record extended by two words in its upstream file."""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg

from pipeline.sources.mirror import Mirror
from pipeline.sources.registry import SourceSpec
from tests.plugins.mirror_changes import add_commit

_RUN_WORDS = (6, 3, 2)  # plain words in the run a touched record gets extended after, longest tried first
_CANDIDATES = 200  # published records tried, by doc id, for a run of words found once in its file


@dataclass(frozen=True)
class Edit:
    """A touched record: which, in which upstream file, and the file's new bytes."""

    doc_id: str
    path: str
    snippet: str
    data: bytes


def _once(raw: bytes, snippet: bytes) -> int | None:
    """Where snippet occurs in raw as whole words, if it occurs exactly once (bytes.find: fast on 50 MB)."""
    at = raw.find(snippet)
    if at < 0 or raw.find(snippet, at + 1) >= 0:
        return None
    end = at + len(snippet)
    letter = re.compile(rb"[A-Za-z]")
    if (at and letter.match(raw, at - 1)) or letter.match(raw, end):
        return None
    return end


def extend_once(raw: bytes, body: str, marker: str, words: int = 6) -> tuple[str, bytes] | None:
    """`raw` with `marker` appended to a run of `words` plain words of `body` that occurs in it exactly once
    (as whole words); (the run, the new bytes), or None. Letters and spaces added inside a string keep YAML,
    JSON, TOML, Turtle and Markdown valid."""
    runs = re.compile(r"[A-Za-z]+(?: [A-Za-z]+){" + str(words - 1) + ",}")
    for match in runs.finditer(body):
        found = match.group().split(" ")
        for start in range(0, len(found) - words + 1, max(1, words // 2)):
            snippet = " ".join(found[start : start + words])
            end = _once(raw, snippet.encode())
            if end is not None:
                return snippet, raw[:end] + f" {marker}".encode() + raw[end:]
    return None


def _show(mirror: Mirror, source: str, rel: str) -> bytes | None:
    git = ["git", "--git-dir", str(mirror.git_dir(source)), "show", f"HEAD:{rel}"]
    done = subprocess.run(git, capture_output=True)
    return done.stdout if done.returncode == 0 else None


def _files(mirror: Mirror, source: str, prefix: str, suffix: str) -> list[str]:
    git = ["git", "--git-dir", str(mirror.git_dir(source)), "ls-tree", "-r", "--name-only", "HEAD", prefix]
    out = subprocess.run(git, check=True, capture_output=True, text=True).stdout.split()
    return sorted(f for f in out if f.endswith(suffix))


def new_sigma_rule(mirror: Mirror, token: str) -> tuple[str, str]:
    """A new Sigma rule (a copy of one with a new id, title and description); (its title, the commit)."""
    rel = _files(mirror, "sigma", "rules/windows/process_creation", ".yml")[0]
    lines = _show(mirror, "sigma", rel).decode().splitlines()  # type: ignore[union-attr]
    title = f"Quokka telemetry beacon {token} launched by a scheduled task"
    edited = []
    for line in lines:
        if line.startswith("title:"):
            line = f"title: {title}"
        elif line.startswith("id:"):
            line = f"id: {uuid.uuid4()}"
        elif line.startswith("description:"):
            line = f"description: Detects the {token} quokka beacon binary started from a scheduled task."
        edited.append(line)
    path = f"rules/windows/process_creation/proc_creation_win_bench_{token}.yml"
    return title, add_commit(
        mirror, "sigma", {path: ("\n".join(edited) + "\n").encode()}, "bench: a new rule", keep=True
    )


def new_kev_entry(mirror: Mirror, token: str) -> tuple[str, str]:
    """A new KEV entry under a new catalogVersion; (its vulnerability name, the commit)."""
    rel = mirror.sources["cisa_kev"].feed_path
    feed = json.loads(mirror.feed_path("cisa_kev").read_bytes())
    title = f"Quokka Telemetry Beacon {token} Command Injection Vulnerability"
    entry = dict(feed["vulnerabilities"][0])
    entry.update(cveID=f"CVE-2099-{int(token, 16) % 90000 + 10000}", vulnerabilityName=title, vendorProject="Quokka")
    entry["shortDescription"] = f"The {token} quokka telemetry beacon lets an attacker inject commands."
    feed["vulnerabilities"].insert(0, entry)
    feed["count"] = len(feed["vulnerabilities"])
    feed["catalogVersion"] = f"2099.01.{int(time.time()) % 100000}"
    return title, add_commit(
        mirror, "cisa_kev", {rel: json.dumps(feed, indent=2).encode()}, "bench: a KEV entry", keep=True
    )


def new_stratus_technique(mirror: Mirror, token: str) -> tuple[str, str]:
    """A new technique page in a new release; (its title, the commit)."""
    rel = _files(mirror, "stratus_red_team", "docs/attack-techniques/AWS", ".md")[0]
    text = _show(mirror, "stratus_red_team", rel).decode()  # type: ignore[union-attr]
    title = f"Exfiltrate quokka beacon {token} data through a shared snapshot"
    # The page's title is its front matter's `title:` (the parser reads that), repeated as the first heading.
    lines = [f"title: {title}" if line.startswith("title: ") else line for line in text.splitlines()]
    heading = next(i for i, line in enumerate(lines) if line.startswith("# "))
    lines[heading] = f"# {title}"
    body = "\n".join(lines) + f"\n\nThe {token} quokka beacon copies data out of the account.\n"
    path = f"docs/attack-techniques/AWS/aws.exfiltration.bench-{token}.md"
    return title, add_commit(mirror, "stratus_red_team", {path: body.encode()}, "bench: a new technique", keep=True)


ADDED = {"sigma": new_sigma_rule, "stratus_red_team": new_stratus_technique, "cisa_kev": new_kev_entry}


def pick_edit(conn: psycopg.Connection, mirror: Mirror, source: str, token: str) -> Edit:
    """The first published record (by doc id) with a run of words found once in its upstream file: of six
    words if one has it, else of three, else two."""
    rows = conn.execute(
        "SELECT doc_id, upstream_path, body FROM documents WHERE source = %s AND upstream_path IS NOT NULL "
        'ORDER BY doc_id COLLATE "C" LIMIT %s',
        [source, _CANDIDATES],
    ).fetchall()
    files: dict[str, bytes | None] = {}
    for words in _RUN_WORDS:
        for doc_id, path, body in rows:
            if path not in files:
                files[path] = _show(mirror, source, path)
            raw = files[path]
            found = extend_once(raw, body, f"quokka {token}", words) if raw else None
            if found:
                return Edit(doc_id, path, found[0], found[1])
    raise LookupError(f"{source}: none of {len(rows)} published records has a run of words found once in its file")


@contextmanager
def _unkept(mirror: Mirror, source: str) -> Iterator[None]:
    """The mirror's build state as it was: its next build returns the mirror to the snapshot."""
    state = mirror.root / "state" / f"{mirror.sources[source].mirror_name}.json"
    before = state.read_bytes() if state.is_file() else None
    try:
        yield
    finally:
        if before is not None:
            state.write_bytes(before)


def change_upstream(conn: psycopg.Connection, mirror: Mirror, source: str) -> str:
    """Make the source's one upstream change; what it was."""
    token = uuid.uuid4().hex[:8]
    with _unkept(mirror, source):
        if source in ADDED:
            title, commit = ADDED[source](mirror, token)
            return f"added {title!r} at {commit[:10]}"
        edit = pick_edit(conn, mirror, source, token)
        commit = add_commit(mirror, source, {edit.path: edit.data}, f"bench: touch {edit.doc_id}")
    return f"touched {edit.doc_id} ({edit.path}) at {commit[:10]}"


def planned_change(spec: SourceSpec) -> str:
    kind = {"commit": "a new commit", "release": "a new release", "feed": "a new feed version"}[spec.tracking]
    what = "adding one record" if spec.name in ADDED else "touching one record"
    return f"{kind} {what}"
