"""What names a webhook (`secrag hooks`): a git repository as `owner/name`, lower case (GitHub's `full_name` is
case-insensitive), or a source's name for a feed. The settings' secrets, the receiver's routes and the sensors
that read the pokes all name hooks through here."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_PART = r"[a-z0-9_.-]{1,100}"
REPOSITORY = re.compile(rf"^(?!\.)({_PART})/(?!\.)({_PART})$")  # owner/name; neither part starts with a dot
FEED = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,99}$")  # a source's name (the sources table's check)


def hook_name(raw: str) -> str:
    """The hook `raw` names, lower case: a repository's owner/name or a source's name (ValueError if neither)."""
    name = raw.strip().lower()
    if not (REPOSITORY.match(name) or FEED.match(name)):
        raise ValueError(f"{raw!r} names no webhook: a repository as owner/name, or a source's name")
    return name


def is_repository(name: str) -> bool:
    return REPOSITORY.match(name) is not None


def repository_of(url: str) -> str | None:
    """The hook of a git URL's repository (`https://github.com/SigmaHQ/sigma.git` -> `sigmahq/sigma`): its last
    two path segments, without `.git`; None when the path has fewer."""
    parts = [p for p in urlsplit(url).path.split("/") if p]
    if len(parts) < 2:
        return None
    name = f"{parts[-2]}/{parts[-1].removesuffix('.git')}".lower()
    return name if REPOSITORY.match(name) else None
