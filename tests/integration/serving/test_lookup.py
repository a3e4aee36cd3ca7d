"""GET /v1/lookup, the MCP tool `lookup` and the search that pins artefact holders, over a store of the whole
LOLDrivers, LOLBAS, GTFOBins and HijackLibs snapshots (published, not embedded) and a tenant's private driver:
every LOLDrivers hash is found, a sample of names and paths in the forms the sources and hosts write them,
Unix names exactly, private records for their own callers only."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pipeline.chunking import ChunkConfig
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import Record
from pipeline.sources.registry import default_registry
from pipeline.store import Access, SourceRow, Store
from secrag import artefacts
from secrag.db import database
from secrag.files import safe_yaml
from secrag.files.package_data import sql_dir
from serving.api.app import create_app
from serving.contract.lookup_models import MAX_LOOKUP_VALUES
from serving.settings import ServingSettings
from tests.plugins.database import migrated_copy
from tests.plugins.upstream import SNAPSHOT

from .test_mcp import call

log = logging.getLogger(__name__)
SOURCES = ("loldrivers", "lolbas", "gtfobins", "hijacklibs")
PRIVATE_HASH = "5e0c7ab1d2f3a4b5c6d7e8f90123456789abcdef0123456789abcdef01234567"
PRIVATE_DOC = "acme_drivers:secret-driver"


def _private() -> Record:
    return Record(
        source="acme_drivers",
        upstream_id="secret-driver",
        title="acmedrv.sys, seen on acme's hosts",
        body="A driver acme's responders found on two hosts.",
        artefacts=artefacts.unique(
            [artefacts.file_hash("SHA256", PRIVATE_HASH), artefacts.windows_name("Name", "AcmeDrv.sys")]
        ),
    )


@pytest.fixture(scope="module")
def records() -> dict[str, list[Record]]:
    registry = default_registry()
    return {name: list(parse_source(registry[name], SNAPSHOT / name, version="test").records) for name in SOURCES}


@pytest.fixture(scope="module")
def store_url(pg_server_url: str, template_db: str, records: dict[str, list[Record]]) -> Iterator[str]:
    with migrated_copy(pg_server_url, template_db, f"secrag_lookup_{os.getpid()}") as url:
        store = Store(sql_dir())
        with database.connect(url, autocommit=True) as conn:
            for source, parsed in records.items():
                store.register_source(conn, SourceRow(name=source, kind="online", description=source))
                result = store.publish(
                    conn, source=source, version="test", records=parsed, lookup={}, chunking=ChunkConfig()
                )
                assert result.status == "published" and result.artefacts > 0
            store.register_source(conn, SourceRow(name="acme_drivers", kind="user_folder", description="acme"))
            store.publish(
                conn,
                source="acme_drivers",
                version="v1",
                records=[_private()],
                lookup={},
                chunking=ChunkConfig(),
                access=Access(tenant="acme", users=("alice",)),
            )
        yield url


@pytest.fixture(scope="module")
def api(store_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(store_url))) as client:
        yield client


def lookup(api: TestClient, values: list[str], key: str | None = None, **params: Any) -> dict[str, list[str]]:  # noqa: ANN401
    """Value -> the doc ids of the records holding it."""
    headers = {"X-API-Key": key} if key else {}
    response = api.get("/v1/lookup", params={"value": values, **params}, headers=headers)
    assert response.status_code == 200, response.text
    return {r["value"]: [d["doc_id"] for d in r["records"]] for r in response.json()["results"]}


def _snapshot_hashes() -> dict[str, set[str]]:
    """Every MD5, SHA-1, SHA-256 and authenticode hash of every LOLDrivers sample, read with a full YAML load
    (the parser reads samples line by line): hash -> the doc ids of the entries listing it."""
    found: dict[str, set[str]] = {}
    for path in sorted((SNAPSHOT / "loldrivers" / "yaml").glob("*.yaml")):
        doc = safe_yaml.load(path.read_text(encoding="utf-8"))
        for sample in doc.get("KnownVulnerableSamples") or []:
            values = [sample.get(k) for k in ("MD5", "SHA1", "SHA256")]
            values += list((sample.get("Authentihash") or {}).values())
            for value in values:
                if value and str(value).strip():
                    found.setdefault(str(value).strip().lower(), set()).add(f"loldrivers:yaml/{path.name}")
    return found


def test_every_loldrivers_hash_in_the_snapshot_is_found(api: TestClient) -> None:
    expected = _snapshot_hashes()
    hashes = sorted(expected)
    missing = []
    for start in range(0, len(hashes), MAX_LOOKUP_VALUES):
        # upper case: the lookup matches hashes in any case
        batch = [h.upper() for h in hashes[start : start + MAX_LOOKUP_VALUES]]
        found = lookup(api, batch, limit=100)
        missing += [h for h in batch if not expected[h.lower()] <= set(found[h])]
    log.info("LOLDrivers hashes found by lookup: %d of %d", len(hashes) - len(missing), len(hashes))
    assert len(hashes) > 10_000 and missing == []


def test_a_sample_of_names_and_paths_is_found_as_hosts_write_them(
    api: TestClient, records: dict[str, list[Record]]
) -> None:
    asked: dict[str, str] = {}  # looked-up value -> the doc id that must be among its records
    for record in records["lolbas"][::10]:
        asked[record.title.upper()] = record.doc_id
        for a in record.artefacts:
            if a.kind == "path" and a.pattern is None:
                # as a host reports it: the drive spelt out, another case
                asked[a.key.replace("%system32%", "C:\\WINDOWS\\system32").replace("%windir%", "c:\\Windows")] = (
                    record.doc_id
                )
    for record in records["hijacklibs"][::20]:
        asked[record.title.upper()] = record.doc_id
        if "%SYSTEM32%" in record.metadata.get("expected_locations", []):
            asked[f"C:\\Windows\\System32\\{record.title}"] = record.doc_id
    for record in records["gtfobins"][::10]:
        asked[record.title] = record.doc_id
    values = list(asked)
    found: dict[str, list[str]] = {}
    for start in range(0, len(values), MAX_LOOKUP_VALUES):
        found |= lookup(api, values[start : start + MAX_LOOKUP_VALUES], limit=100)
    missing = [v for v, doc_id in asked.items() if doc_id not in found[v]]
    log.info("sampled names and paths found: %d of %d", len(asked) - len(missing), len(asked))
    assert len(asked) > 100 and missing == []


def test_unix_names_match_exactly_and_windows_names_in_any_case(api: TestClient) -> None:
    found = lookup(api, ["bash", "BASH", "Bash", "CERTUTIL.exe", "certutil.exe"])
    assert found["certutil.exe"][0] == "lolbas:yml/OSBinaries/Certutil.yml"  # named by it: first
    assert found["bash"] == ["gtfobins:_gtfobins/bash"] and found["BASH"] == found["Bash"] == []
    # certutil.exe is a LOLBin and a HijackLibs executable
    assert (
        found["CERTUTIL.exe"] == found["certutil.exe"] and "lolbas:yml/OSBinaries/Certutil.yml" in found["certutil.exe"]
    )
    assert any(d.startswith("hijacklibs:") for d in found["certutil.exe"])


def test_the_matching_fields_are_named(api: TestClient) -> None:
    response = api.get("/v1/lookup", params={"value": ["c:/windows/syswow64/CertUtil.exe"]}).json()
    (result,) = response["results"]
    by_id = {r["doc_id"]: r for r in result["records"]}
    record = by_id["lolbas:yml/OSBinaries/Certutil.yml"]
    assert record["title"] == "Certutil.exe"
    assert {(m["kind"], m["field"], m["value"]) for m in record["matches"]} == {
        ("file_name", "Name", "Certutil.exe"),
        ("path", "Full_Path.Path", "C:\\Windows\\SysWOW64\\certutil.exe"),
    }
    assert result["truncated"] is False and isinstance(response["took_ms"], float)
    # a HijackLibs record holds it as an executable's file name (its own path is another)
    hijack = [r for d, r in by_id.items() if d.startswith("hijacklibs:")]
    assert hijack and all(m["kind"] == "file_name" for r in hijack for m in r["matches"])


def test_a_path_with_a_version_placeholder_matches_any_version(
    api: TestClient, records: dict[str, list[Record]]
) -> None:
    record, placeholder = next(
        (r, a) for r in records["hijacklibs"] for a in r.artefacts if a.pattern and "\\%version%\\" in a.key
    )
    concrete = placeholder.key.replace("%version%", "12.0.3")
    assert record.doc_id in lookup(api, [concrete])[concrete]


def test_an_unknown_value_has_no_records_and_bad_requests_are_422(api: TestClient) -> None:
    response = api.get("/v1/lookup", params={"value": ["no-such-driver.sys", "0" * 64]})
    assert response.status_code == 200
    assert [(r["value"], r["records"], r["truncated"]) for r in response.json()["results"]] == [
        ("no-such-driver.sys", [], False),
        ("0" * 64, [], False),
    ]
    assert api.get("/v1/lookup").status_code == 422
    assert api.get("/v1/lookup", params={"value": ["x"] * (MAX_LOOKUP_VALUES + 1)}).status_code == 422
    assert api.get("/v1/lookup", params={"value": ["x"], "limit": 0}).status_code == 422
    assert api.get("/v1/lookup", params={"value": [" "]}).status_code == 422


def test_limit_cuts_the_records_of_a_value_and_says_so(api: TestClient) -> None:
    response = api.get("/v1/lookup", params={"value": ["certutil.exe"], "limit": 2}).json()
    (result,) = response["results"]
    assert len(result["records"]) == 2 and result["truncated"] is True


def test_a_tenant_s_private_record_is_found_by_its_own_caller_only(api: TestClient) -> None:
    for key in ("alice-key",):
        assert lookup(api, [PRIVATE_HASH, "acmedrv.SYS"], key) == {
            PRIVATE_HASH: [PRIVATE_DOC],
            "acmedrv.SYS": [PRIVATE_DOC],
        }
    for key in (None, "bob-key", "gina-key"):
        assert lookup(api, [PRIVATE_HASH, "acmedrv.SYS"], key) == {PRIVATE_HASH: [], "acmedrv.SYS": []}
    hits = api.post("/v1/search", json={"query": PRIVATE_HASH, "mode": "fts"}).json()["results"]
    assert PRIVATE_DOC not in [r["doc_id"] for r in hits]


@pytest.mark.parametrize("mode", ["fts", "hybrid", "fuzzy"])
def test_a_search_for_a_hash_or_file_name_puts_its_records_first(api: TestClient, mode: str) -> None:
    sha1 = "e9bca8f4b8c60688eacc7d18c6ba7777c181bb84"  # a sample of loldrivers 00561455-...
    hits = api.post("/v1/search", json={"query": sha1.upper(), "mode": mode}).json()["results"]
    assert hits and hits[0]["doc_id"] == "loldrivers:yaml/00561455-9da1-4f0c-8564-e4c99b716a74.yaml"
    assert hits[0]["exact"] is True
    hits = api.post("/v1/search", json={"query": "certutil.exe", "mode": mode}).json()["results"]
    assert hits[0]["doc_id"] == "lolbas:yml/OSBinaries/Certutil.yml"  # the record it names, before those loading it
    assert hits[1]["exact"] and hits[1]["doc_id"].startswith("hijacklibs:")
    hits = api.post("/v1/search", json={"query": "VERSION.DLL", "mode": mode}).json()["results"]
    assert hits[0]["exact"] and hits[0]["doc_id"].startswith("hijacklibs:") and hits[0]["title"] == "version.dll"
    private = api.post("/v1/search", json={"query": "acmedrv.sys", "mode": mode}, headers={"X-API-Key": "alice-key"})
    assert private.json()["results"][0]["doc_id"] == PRIVATE_DOC


def test_the_mcp_tool_answers_as_rest(api: TestClient) -> None:
    values = ["certutil.exe", PRIVATE_HASH]
    via_mcp = call(api, "lookup", "alice-key", value=values)
    via_rest = api.get("/v1/lookup", params={"value": values}, headers={"X-API-Key": "alice-key"}).json()
    assert via_mcp["results"] == via_rest["results"]
