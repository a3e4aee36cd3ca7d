"""`folders/<name>`: publish one configured user-document folder as its own access-controlled source.

One asset per configured folder, not one dynamic partition per folder: each folder is its own
source with its own tenant and ACL, its own embeddings asset, checks, sensor and lineage, and
folders are configuration (YAML read when the code location loads), not data discovered at run
time. A partitioned asset would share one code version, one check set and one downstream
partitioned embeddings asset across tenants, and a partition's history is harder to read than an
asset's. Adding a folder means editing the YAML and reloading the code location.
"""

import hashlib
import json
import time

import dagster as dg
from pydantic import Field

from secrag.errors import ConfigError

from ..automation import on_new_inputs
from ..folders import FolderSpec, FolderUnreadable, read_folder
from ..resources import StoreResource
from ..sources.records import doc_id
from ..store import Access, PublishResult, SourceRow
from .keys import OWNERS, folder_key
from .publishing import publish_check_specs, publish_checks, publish_metadata, skipped_sample

FOLDER_READER_VERSION = "3"  # 3: chunk spans, PDF pages and media types (migration 0015)


def folder_code_version(spec: FolderSpec) -> str:
    """The reader version and the folder's access: a changed ACL in folders.yaml is new code, so
    automation re-publishes the folder (its documents take the new tenant, users and groups). A refused
    entry is new code too, so the next automated run fails with its configuration error."""
    access = json.dumps([spec.tenant, sorted(spec.users), sorted(spec.groups)])
    if spec.error:
        access += spec.error
    return f"{FOLDER_READER_VERSION}-{hashlib.sha256(access.encode()).hexdigest()[:12]}"


class FolderConfig(dg.Config):
    """Run config of a folder publish: force one the shrink guard refused."""

    force: bool = Field(
        default=False,
        description="Publish even if the folder lists no documents where it served some, or shrank by more "
        "than SECRAG_FOLDER_MAX_SHRINK.",
    )


def refused_folder(name: str, result: PublishResult, previous: int) -> str:
    """The run's failure message of a refused folder publish: why, what stays, and how to accept it."""
    why = f"lists no documents where it served {previous}" if result.refused == "empty" else result.reason
    return (
        f"folder {name}: {why}; the previous documents stay served (an unmounted or emptied mount point lists "
        "none: mount it again, or, if the removal is real, rerun with run config force: true)"
    )


def build_folder_asset(spec: FolderSpec) -> dg.AssetsDefinition:
    """Read every file of the folder and publish the set: changed files replace their chunks, deleted files
    disappear, and a file that is there but cannot be read keeps its document. Shrinking is accepted (deleting
    is what users do) up to SECRAG_FOLDER_MAX_SHRINK, but a folder that served documents and lists none (an
    unmounted mount point) is refused until forced; a folder that cannot be listed whole publishes nothing."""
    key = folder_key(spec.name)

    @dg.asset(
        key=key,
        group_name="user_folders",
        code_version=folder_code_version(spec),
        automation_condition=on_new_inputs(),
        owners=OWNERS,
        kinds={"python", "postgres"},
        check_specs=publish_check_specs(key),
        tags={"secrag/source": spec.name},
        description=f"Refused: {spec.error}"
        if spec.error
        else f"User documents in {spec.path} (tenant {spec.tenant or 'public'}); "
        f"{spec.description or 'txt, md, json, jsonl, yaml, html and pdf files'}.",
        metadata={
            "path": str(spec.path),
            "tenant": spec.tenant or "",
            "acl_users": ", ".join(spec.users),
            "acl_groups": ", ".join(spec.groups),
            "max_file_bytes": spec.max_file_bytes,
        },
    )
    def _publish(context: dg.AssetExecutionContext, config: FolderConfig, store: StoreResource):  # noqa: ANN202
        started = time.monotonic()
        db = store.store()
        with store.connect() as conn:
            db.register_source(
                conn,
                SourceRow(
                    name=spec.name,
                    kind="user_folder",
                    category="user",
                    description=spec.description or f"user folder {spec.name}",  # no server path leaves
                ),
            )
            # Every attempt is a source_versions row: a refused entry and an unreadable folder too. What
            # the folder served stays as it is; the visible check fails closed on what it must.
            if spec.error:
                db.record_failure(conn, spec.name, None, None, ConfigError(spec.error))
                raise dg.Failure(spec.error, metadata={"error_kind": "config_error"})
            try:
                read = read_folder(spec)
            except FolderUnreadable as exc:  # a file missing from an incomplete listing may be there still
                db.record_failure(conn, spec.name, None, "fetch", exc, details={"unlisted": exc.paths})
                raise dg.Failure(
                    f"{exc}; the previous documents stay served",
                    metadata={"error_kind": "fetch_failed", "unlisted": dg.MetadataValue.json(exc.paths)},
                ) from exc
            except Exception as exc:
                db.record_failure(conn, spec.name, None, "fetch", exc)
                raise
            digest = read.scan.digest()
            previous = db.served_records(conn, spec.name)
            # A shrink within the limit is a user's deletion; a folder that served documents and lists none is
            # refused (the store's guard) until forced, and one that served none publishes zero documents. A
            # missing or unlistable folder failed in read_folder above, so what it served stays served, and a
            # file that could not be read keeps its document (`kept`): only files that are gone go.
            limit = store.folder_shrink_limit()
            force = config.force or not previous
            result = db.publish(
                conn,
                source=spec.name,
                version=digest[:16],
                records=read.records,
                skipped=read.skipped,
                lookup=db.technique_names(conn),
                chunking=store.chunking(),
                access=Access(spec.tenant, spec.users, spec.groups),
                max_shrink=limit,
                force=force,
                details={"files_seen": read.files_seen},
                kept=[doc_id(spec.name, rel) for rel in read.kept],
            )
        # A folder that served nothing, or a forced publish: its failed checks warn instead of blocking.
        checks = publish_checks(result, previous=previous, max_shrink=limit, forced=force)
        if result.status == "refused":
            yield from checks
            raise dg.Failure(
                refused_folder(spec.name, result, previous),
                metadata={
                    "error_kind": result.refused or "",
                    "reason": result.reason or "",
                    "records": result.parsed,
                    "previous_records": previous,
                    "max_shrink": limit,
                    "files_seen": read.files_seen,
                    "errors": dg.MetadataValue.md(skipped_sample(result.details)),
                },
            )
        context.log.info(
            f"folder {spec.name}: {result.parsed} documents, {len(read.skipped)} files skipped, "
            f"{result.kept} kept as they were (unreadable)"
        )
        yield dg.MaterializeResult(
            data_version=dg.DataVersion(digest),
            check_results=checks,
            metadata={
                "version": digest[:16],
                "dagster/row_count": result.parsed,
                "files_seen": read.files_seen,
                **publish_metadata(result),
                "kept": result.kept,  # documents of files that could not be read, left as they were
                "file_errors": dg.MetadataValue.json({s.path: s.reason for s in read.skipped[:50]}),
                "seconds": round(time.monotonic() - started, 3),
            },
        )

    return _publish
