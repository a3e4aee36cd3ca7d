"""The LOLDrivers parser on the real snapshot, plus sample trimming and other quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsers import loldrivers_yaml
from pipeline.sources.parsers.yaml_entry import load_mapping
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT
BIGGEST = "yaml/d35cb48d-2aca-4d7d-a194-f4566183bcd9.yaml"  # 41 samples, 1.2 MB


@pytest.fixture(scope="module")
def outcome() -> ParseOutcome:
    return parse_source(default_registry()["loldrivers"], UPSTREAM / "loldrivers")


@pytest.fixture(scope="module")
def by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, rel: str = "yaml/test.yaml", max_samples: int = 5) -> SourceFile:
    return SourceFile(
        source="loldrivers",
        root=Path("/nonexistent"),
        rel=rel,
        data=text.encode(),
        options={"platforms": ["windows"], "max_samples": max_samples},
        web_url="https://example.test/blob/main/{path}",
    )


# --- whole snapshot -------------------------------------------------------------------------


def test_counts(outcome: ParseOutcome) -> None:
    assert outcome.files_seen == 661
    assert len(outcome.records) == 661
    assert len(outcome.skipped) == 0
    assert outcome.with_techniques == 661  # every entry has a MitreID


def test_technique_spread(outcome: ParseOutcome) -> None:
    with_t1068 = sum(1 for r in outcome.records if "T1068" in r.techniques)
    assert with_t1068 == 625
    # `MitreID: T1542, T1068` is one string naming two techniques.
    assert sum(1 for r in outcome.records if r.techniques == ("T1068", "T1542")) == 1


def test_malicious_driver(by_id: dict[str, Record]) -> None:
    r = by_id["loldrivers:yaml/00561455-9da1-4f0c-8564-e4c99b716a74.yaml"]
    assert r.title == "driver_090d409f.sys"
    assert r.url == (
        "https://github.com/magicsword-io/LOLDrivers/blob/main/yaml/00561455-9da1-4f0c-8564-e4c99b716a74.yaml"
    )
    assert r.techniques == ("T1068",)
    assert r.platforms == ("windows",)
    assert r.tags == ("malicious",)
    assert "variants of Poortry" in r.body
    assert r.metadata["id"] == "00561455-9da1-4f0c-8564-e4c99b716a74"
    assert r.metadata["sha256"] == ["090d409f86430e078694e621ad0bd5e458d32aa727f0eb99bda3961577df8d49"]


def test_vulnerable_driver_with_cves(by_id: dict[str, Record]) -> None:
    r = by_id["loldrivers:yaml/2bea1bca-753c-4f09-bc9f-566ab0193f4a.yaml"]
    assert r.title == "gdrv.sys"
    assert r.metadata["cves"] == ["CVE-2018-19320", "CVE-2018-19322", "CVE-2018-19323", "CVE-2018-19321"]
    assert "CVEs: CVE-2018-19320" in r.body
    assert "Company: GIGA-BYTE TECHNOLOGY CO., LTD." in r.body
    assert r.metadata["verified"] is True


def test_only_a_few_hashes_are_kept(outcome: ParseOutcome, by_id: dict[str, Record]) -> None:
    assert max(len(r.metadata.get("sha256", [])) for r in outcome.records) == 5
    big = by_id[f"loldrivers:{BIGGEST}"]
    assert big.metadata["samples"] == 41
    assert len(big.metadata["sha256"]) == 5
    assert "Known samples (first 5 of 41):" in big.body
    assert len(big.body) < 5000


def test_trimmed_load_matches_full_load() -> None:
    """Cutting samples from the text before loading changes nothing that is kept."""
    data = (UPSTREAM / "loldrivers" / BIGGEST).read_bytes()
    file = _file(data.decode(), rel=BIGGEST)
    (fast,) = loldrivers_yaml.parse(file)
    full = load_mapping(file)
    samples = full["KnownVulnerableSamples"]
    assert fast.metadata["samples"] == len(samples)
    assert fast.metadata["sha256"] == [s["SHA256"] for s in samples if s.get("SHA256")][:5]


def test_metadata_is_json_serialisable(outcome: ParseOutcome) -> None:
    json.dumps([r.metadata for r in outcome.records])


# --- quirks ---------------------------------------------------------------------------------


def _entry(samples: str) -> str:
    return f"""\
Id: 11111111-2222-3333-4444-555555555555
Tags:
- test.sys
- test64.sys
MitreID: T1542, T1068
Category: vulnerable driver
Verified: 'FALSE'
Commands:
  Command: sc.exe create test.sys
  Description: A test driver.
  Usecase: Elevate privileges
  Privileges: kernel
  OperatingSystem: Windows 10
KnownVulnerableSamples:
{samples}Resources:
- https://example.test/
"""


def _sample(n: int, sha256: bool = True) -> str:
    digest = f"  SHA256: '{n:064x}'\n" if sha256 else "  SHA256: ''\n"
    return f"- Filename: t{n}.sys\n{digest}  Authentihash:\n    SHA256: {'f' * 64}\n  Imports:\n  - ntoskrnl.exe\n"


def test_hashes_skip_samples_without_sha256() -> None:
    samples = _sample(1, sha256=False) + _sample(2, sha256=False) + "".join(_sample(n) for n in range(3, 10))
    (record,) = loldrivers_yaml.parse(_file(_entry(samples), max_samples=3))
    assert record.metadata["samples"] == 9
    assert record.metadata["sha256"] == [f"{n:064x}" for n in (3, 4, 5)]
    assert record.techniques == ("T1068", "T1542")
    assert record.metadata["verified"] is False
    assert record.metadata["resources"] == ["https://example.test/"]  # the key after the samples
    assert "Also known as: test64.sys" in record.body


def test_few_samples_are_loaded_whole() -> None:
    (record,) = loldrivers_yaml.parse(_file(_entry(_sample(1)), max_samples=3))
    assert record.metadata["samples"] == 1
    assert record.upstream_id == "yaml/test.yaml"


@pytest.mark.parametrize(
    "text, reason",
    [
        ("Tags: [x.sys]\n", "lacks an Id"),
        ("- a list\n", "mapping"),
        ("Id: [unclosed\n", "invalid YAML"),
    ],
)
def test_bad_files_raise(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(loldrivers_yaml.parse(_file(text)))


def test_every_sample_s_hashes_and_names_are_artefacts_not_only_the_kept_ones(by_id: dict[str, Record]) -> None:
    record = by_id[f"loldrivers:{BIGGEST}"]
    doc = load_mapping(_file((UPSTREAM / "loldrivers" / BIGGEST).read_text(encoding="utf-8"), max_samples=1000))
    keys = {(a.kind, a.key) for a in record.artefacts}
    samples = doc["KnownVulnerableSamples"]
    assert len(samples) == 41 and len(record.metadata["sha256"]) == 5
    for sample in samples:
        for field in ("MD5", "SHA1", "SHA256"):
            if sample.get(field):
                assert (field.lower(), str(sample[field]).lower()) in keys
        for value in (sample.get("Authentihash") or {}).values():
            if value:
                assert ("authentihash", str(value).lower()) in keys


def test_sample_keys_are_read_at_either_indent_of_one_file() -> None:
    """One upstream file writes `-   Filename:` (keys four columns right) and `- Filename:` (two) in one list."""
    text = (
        "Id: x\nTags:\n- a.sys\nKnownVulnerableSamples:\n"
        "-   Filename: A.sys\n    MD5: " + "A" * 32 + "\n    Authentihash:\n        SHA256: " + "b" * 64 + "\n"
        "    Imports:\n    - MD5: " + "c" * 32 + "\n"
        "- Filename: b.sys\n  SHA1: " + "d" * 40 + "\n  RichPEHeaderHash:\n    MD5: " + "e" * 32 + "\n"
        "Detection: []\n"
    )
    (record,) = loldrivers_yaml.parse(_file(text))
    found = {(a.kind, a.field, a.key) for a in record.artefacts}
    assert found == {
        ("file_name", "Tags", "a.sys"),
        ("file_name", "KnownVulnerableSamples.Filename", "a.sys"),
        ("md5", "KnownVulnerableSamples.MD5", "a" * 32),
        ("authentihash", "KnownVulnerableSamples.Authentihash.SHA256", "b" * 64),
        ("file_name", "KnownVulnerableSamples.Filename", "b.sys"),
        ("sha1", "KnownVulnerableSamples.SHA1", "d" * 40),
        ("rich_header_hash", "KnownVulnerableSamples.RichPEHeaderHash.MD5", "e" * 32),
    }  # what a sample's lists hold (imports) is not the sample's
