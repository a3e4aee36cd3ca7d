"""`secrag ingest add|remove|list`: one-time documents, stored in the database and published by the next
Dagster run (the `ingested_documents` sensor starts one within about 15 s; pipeline/assets/ingested.py)."""

from __future__ import annotations

import getpass
import hashlib
import zlib
from pathlib import Path

import click

from secrag.access import access_problem
from secrag.db import database
from secrag.db.queries import Queries
from secrag.errors import ConfigError
from secrag.files.safe_files import UnsafeFile, read_capped
from secrag.settings import get_settings

from .errors import SecragGroup

MAX_BYTES_CAP = 256 * 1024 * 1024
OPTIONS = {"tenant": "--tenant", "users": "--user", "groups": "--group", "public": "--public"}
WHEN = "the ingested_documents sensor {does} within about 15 s (or materialize ingested/documents)"


@click.group(cls=SecragGroup)
def ingest() -> None:
    """Add, remove and list one-time documents (single files outside the watched folders)."""


@ingest.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--name", required=True, help="Friendly name: the document's source becomes ingested_<name>.")
@click.option("--tenant", default=None, help="Tenant who may see it (this or --public is required).")
@click.option("--user", "users", multiple=True, help="A user of the tenant who may see it (repeatable).")
@click.option("--group", "groups", multiple=True, help="A group of the tenant that may see it (repeatable).")
@click.option("--public", is_flag=True, help="Every caller may see it, like the online sources.")
@click.option("--replace", is_flag=True, help="Replace the document already stored under this name.")
@click.option(
    "--max-bytes",
    default=None,
    type=click.IntRange(1, MAX_BYTES_CAP),
    help="Size cap (default 20 MiB, at most 256 MiB).",
)
def add(
    file: Path,
    name: str,
    tenant: str | None,
    users: tuple[str, ...],
    groups: tuple[str, ...],
    public: bool,
    replace: bool,
    max_bytes: int | None,
) -> None:
    """Store FILE (txt, md, json, jsonl, yaml, html or pdf) under NAME for the next run to publish."""
    from pipeline.folder_formats import extract
    from pipeline.folders import SUFFIXES
    from pipeline.ingested import DEFAULT_MAX_BYTES, check_name, source_name

    check_name(name)
    if file.suffix.lower() not in SUFFIXES:
        raise ConfigError(f"{file.name}: not a supported format; use one of {', '.join(sorted(SUFFIXES))}")
    tenant = tenant.strip() if tenant is not None else None
    users, groups = tuple(u.strip() for u in users), tuple(g.strip() for g in groups)
    if tenant == "" or "" in users or "" in groups:
        raise ConfigError("--tenant, --user and --group take non-empty names")
    problem = access_problem(tenant=tenant, users=users, groups=groups, public=public)
    if problem is not None:  # the rule and the words of folders.yaml (secrag/access.py)
        raise ConfigError(f"{OPTIONS[problem.field]}: {problem.message}")
    cap = max_bytes or DEFAULT_MAX_BYTES
    try:
        data = read_capped(file.resolve(), cap)
    except UnsafeFile as exc:
        raise ConfigError(f"{file}: {exc.reason} (a one-time document holds 1 to {cap} bytes)") from exc
    size = len(data)
    if size == 0:
        raise ConfigError(f"{file} holds 0 bytes; a one-time document holds 1 to {cap}")
    _, body, _ = extract(file.name, data)  # a clear ParseError now, not in a run later
    if not body.strip():
        raise ConfigError(f"{file} holds no text")
    settings = get_settings()
    q = Queries(settings.sql_dir, "ingest")
    params = {
        "name": name,
        "filename": file.name,
        "size": size,
        "sha256": hashlib.sha256(data).hexdigest(),
        "content": zlib.compress(data, 6),
        "tenant": tenant,
        "acl_users": list(users),
        "acl_groups": list(groups),
        "added_by": getpass.getuser(),
        "replace": replace,
    }
    with database.connect(database.database_url(settings), timeout=settings.connect_timeout, autocommit=True) as conn:
        stored = conn.execute(q.add, params).fetchone()
    if stored is None:
        raise ConfigError(f"a document is already stored as {name!r}", hint="add --replace to replace it")
    click.echo(f"stored {file.name} as {source_name(name)} ({size} bytes); {WHEN.format(does='publishes it')}")


@ingest.command()
@click.argument("name")
def remove(name: str) -> None:
    """Unpublish the one-time document NAME (the next run deletes it and its chunks)."""
    from pipeline.ingested import check_name, source_name

    check_name(name)
    settings = get_settings()
    q = Queries(settings.sql_dir, "ingest")
    with database.connect(database.database_url(settings), timeout=settings.connect_timeout, autocommit=True) as conn:
        marked = conn.execute(q.remove, {"name": name}).fetchone()
    if marked is None:
        raise ConfigError(f"no one-time document {name!r} is stored", hint="`secrag ingest list` shows them")
    click.echo(f"marked {source_name(name)} for removal; {WHEN.format(does='removes it')}")


@ingest.command("list")
def list_documents() -> None:
    """The stored one-time documents, with who may see them."""
    settings = get_settings()
    q = Queries(settings.sql_dir, "ingest")
    with database.connect(database.database_url(settings), timeout=settings.connect_timeout) as conn:
        rows = conn.execute(q.listing).fetchall()
    if not rows:
        click.echo("no one-time documents")
    for name, filename, size, tenant, users, groups, who, at, removed in rows:
        access = f"tenant {tenant}" + (f", users {', '.join(users)}" if users else "") if tenant else "public"
        access += f", groups {', '.join(groups)}" if groups else ""
        state = f"removal pending since {removed:%Y-%m-%d %H:%M}" if removed else f"added {at:%Y-%m-%d %H:%M} by {who}"
        click.echo(f"{name:<24} {filename:<32} {size:>9} B  {access}; {state}")
