"""Media types of records' upstream forms: by extension, written back and read as data."""

from __future__ import annotations

import pytest

from secrag.net import media_types
from secrag.net.media_types import JSON, TOML, TURTLE, YAML


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("rules/a.yml", YAML),
        ("x/Y.YAML", YAML),
        ("t.tkape", YAML),
        ("b.json", JSON),
        ("r.toml", TOML),
        ("d.ttl", TURTLE),
        ("_gtfobins/awk", "text/plain"),
        ("README.md", "text/markdown"),
    ],
)
def test_media_type_by_extension(path: str, expected: str) -> None:
    assert media_types.of_path(path) == expected


def test_records_are_written_back_and_read_as_data() -> None:
    record = {"id": "attack-pattern--1", "name": "Été", "tags": ["a", "b"]}
    for media_type in (JSON, YAML):
        assert media_types.load(media_types.dump(record, media_type), media_type) == record
    assert media_types.dump("as is", TURTLE) == "as is"
    assert media_types.load('[rule]\nname = "x"\n', TOML) == {"rule": {"name": "x"}}


def test_text_and_unparsable_forms_are_not_data() -> None:
    assert media_types.load("# A heading", "text/markdown") is None
    assert media_types.load("key: [unclosed", YAML) is None
    assert media_types.load("{", JSON) is None
    assert media_types.load("a = ", TOML) is None
    bomb = "k0: &k0 [x, x]\n" + "".join(f"k{i}: &k{i} [*k{i - 1}, *k{i - 1}, *k{i - 1}]\n" for i in range(1, 40))
    assert media_types.load(bomb, YAML) is None  # the YAML limits hold
