"""The parse driver: file selection, limits and per-file isolation on real parser modules."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pipeline.sources.parsing import parse_source
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from secrag.files import safe_yaml
from tests.plugins.upstream import SNAPSHOT

GOOD = (SNAPSHOT / "lolbas" / "yml" / "OSBinaries" / "Certutil.yml").read_bytes()


def spec(**changes: object):
    return dataclasses.replace(default_registry()["lolbas"], **changes)


def tree(tmp_path: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return tmp_path


def test_good_and_bad_files_are_isolated(tmp_path: Path) -> None:
    files = {
        f"yml/OSBinaries/Good{i}.yml": GOOD.replace(b"Name: Certutil.exe", f"Name: Good{i}.exe".encode())
        for i in range(9)
    }
    files["yml/OSBinaries/Broken.yml"] = b"Name: [unclosed\n"
    outcome = parse_source(spec(), tree(tmp_path, files))
    assert len(outcome.records) == 9
    assert [(s.path, s.reason.split(" at ")[0]) for s in outcome.skipped] == [
        ("yml/OSBinaries/Broken.yml", "invalid YAML")
    ]


def test_symlinks_are_refused(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo", {"yml/OSBinaries/Certutil.yml": GOOD})
    outside = tree(tmp_path / "outside", {"secret.yml": GOOD})
    (root / "yml" / "OSBinaries" / "Link.yml").symlink_to(outside / "secret.yml")
    outcome = parse_source(spec(), root, max_error_share=1.0)
    assert [s.reason for s in outcome.skipped] == ["symlinks are refused"]
    assert len(outcome.records) == 1


def test_oversized_files_are_skipped(tmp_path: Path) -> None:
    cap = len(GOOD) + 10
    root = tree(tmp_path, {"yml/OSBinaries/Certutil.yml": GOOD, "yml/OSBinaries/Huge.yml": b"#" * (cap + 1)})
    outcome = parse_source(spec(max_file_bytes=cap), root, max_error_share=1.0)
    assert [s.path for s in outcome.skipped] == ["yml/OSBinaries/Huge.yml"]
    assert f"exceeds the {cap}-byte limit" in outcome.skipped[0].reason


def test_an_upstream_that_moved_its_folder_fails_the_source(tmp_path: Path) -> None:
    root = tree(tmp_path, {"yaml/OSBinaries/Certutil.yml": GOOD})
    with pytest.raises(ParseError, match="did upstream move its folder"):
        parse_source(spec(), root)


def test_nothing_parsed_or_too_many_errors_fail_the_source(tmp_path: Path) -> None:
    only_bad = tree(tmp_path / "a", {"yml/OSBinaries/Bad.yml": b"- [\n"})
    with pytest.raises(ParseError, match="nothing parsed"):
        parse_source(spec(), only_bad)
    files = {"yml/OSBinaries/Certutil.yml": GOOD, **{f"yml/OSBinaries/Bad{i}.yml": b"- [\n" for i in range(3)}}
    with pytest.raises(ParseError, match="3 of 4 files failed"):
        parse_source(spec(), tree(tmp_path / "b", files), max_error_share=0.5)


def test_duplicate_upstream_ids_keep_the_first(tmp_path: Path) -> None:
    rule = next((SNAPSHOT / "sigma" / "rules" / "windows" / "process_creation").glob("*.yml")).read_bytes()
    root = tree(tmp_path, {"rules/a/one.yml": rule, "rules/b/two.yml": rule})
    outcome = parse_source(default_registry()["sigma"], root, max_error_share=1.0)
    assert len(outcome.records) == 1 and outcome.records[0].path == "rules/a/one.yml"
    assert outcome.skipped[0].path == "rules/b/two.yml" and "duplicate id sigma:" in outcome.skipped[0].reason


def test_a_file_holding_one_record_is_its_upstream_form(tmp_path: Path) -> None:
    [record] = parse_source(spec(), tree(tmp_path, {"yml/OSBinaries/Certutil.yml": GOOD})).records
    assert record.raw.encode() == GOOD
    assert (record.raw_media_type, record.raw_whole_file) == ("application/yaml", True)


@pytest.mark.parametrize(
    ("source", "path", "key"),
    [
        ("atomic", "atomics/T1003.001/T1003.001.yaml", "auto_generated_guid"),
        ("forensic_artifacts", "artifacts/data/windows.yaml", "name"),
    ],
)
def test_each_record_of_a_file_holding_many_is_its_own_document(source: str, path: str, key: str) -> None:
    """One Atomic test, one artifact definition: the record's own mapping, not the file."""
    root = SNAPSHOT / source
    outcome = parse_source(dataclasses.replace(default_registry()[source], paths=(path,)), root)
    assert len(outcome.records) > 1
    for record in outcome.records:
        assert not record.raw_whole_file and record.raw_media_type == "application/yaml"
        assert str(safe_yaml.load(record.raw)[key]) == record.upstream_id
