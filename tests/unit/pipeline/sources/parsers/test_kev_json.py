"""The KEV parser on the real feed snapshot, plus inline edge cases."""

from __future__ import annotations

import json

import pytest

from pipeline.sources.parsers import kev_json
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT
ROOT = UPSTREAM / "cisa_kev"


@pytest.fixture(scope="module")
def kev() -> dict[str, Record]:
    outcome = parse_source(default_registry()["cisa_kev"], ROOT)
    assert len(outcome.records) == 1662
    assert outcome.skipped == ()
    assert outcome.files_seen == 1
    assert outcome.with_techniques == 0  # KEV does not map to ATT&CK
    return {r.doc_id: r for r in outcome.records}


def test_registry_is_a_feed() -> None:
    spec = default_registry()["cisa_kev"]
    assert spec.tracking == "feed"
    assert spec.version_field == "catalogVersion"
    assert spec.feed_url == ("https://www.cisa.gov/sites/default/files/feeds/known_exploited_vulnerabilities.json")
    assert spec.paths == ("data/known_exploited_vulnerabilities.json",)


def test_log4shell(kev: dict[str, Record]) -> None:
    r = kev["cisa_kev:CVE-2021-44228"]
    assert r.title == "Apache Log4j2 Remote Code Execution Vulnerability"
    assert r.url == ("https://www.cisa.gov/known-exploited-vulnerabilities-catalog?search_api_fulltext=CVE-2021-44228")
    assert "JNDI features" in r.body
    assert r.metadata["known_ransomware_use"] == "Known"
    assert r.metadata["cwes"] == ["CWE-20", "CWE-400", "CWE-502"]
    assert "ransomware" in r.tags and "apache" in r.tags


def test_newest_entry(kev: dict[str, Record]) -> None:
    r = kev["cisa_kev:CVE-2026-8037"]
    assert r.metadata["vendor"] == "Progress" and r.metadata["date_added"] == "2026-08-07"
    assert "https://nvd.nist.gov/vuln/detail/CVE-2026-8037" in r.metadata["references"]
    assert "ransomware" not in r.tags


def test_catalog_version_does_not_change_record_hashes() -> None:
    vuln = {
        "cveID": "CVE-2024-0001",
        "vendorProject": "V",
        "product": "P",
        "vulnerabilityName": "N",
        "shortDescription": "d",
        "cwes": [],
    }
    hashes = set()
    for version in ("2024.01.01", "2024.01.02"):
        feed = {"catalogVersion": version, "vulnerabilities": [vuln]}
        file = SourceFile(source="cisa_kev", root=ROOT, rel="data/k.json", data=json.dumps(feed).encode())
        hashes.update(r.content_hash for r in kev_json.parse(file))
    assert len(hashes) == 1


def test_entries_without_a_cve_id_are_dropped() -> None:
    feed = {"vulnerabilities": [{"cveID": "not-a-cve"}, "junk", {"cveID": "cve-2020-1234"}]}
    file = SourceFile(source="cisa_kev", root=ROOT, rel="data/k.json", data=json.dumps(feed).encode())
    assert [r.upstream_id for r in kev_json.parse(file)] == ["CVE-2020-1234"]


@pytest.mark.parametrize("data", [b"{", b"[]", b'{"vulnerabilities": {}}'])
def test_malformed_feed_raises(data: bytes) -> None:
    file = SourceFile(source="cisa_kev", root=ROOT, rel="data/k.json", data=data)
    with pytest.raises(ParseError):
        list(kev_json.parse(file))
