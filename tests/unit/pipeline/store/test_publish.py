"""The publish guard and the details a publish records, without a database."""

from __future__ import annotations

import pytest

from pipeline.chunking import ChunkConfig
from pipeline.sources.records import Skipped
from pipeline.store.models import PUBLIC
from pipeline.store.publish import MAX_SKIP_SAMPLES, Publication, refusal


@pytest.mark.parametrize(
    ("previous", "count", "max_shrink", "expected"),
    [
        (0, 0, 0.5, "empty result: nothing to publish"),
        (10, 0, 0.5, "empty result: nothing to publish"),
        (0, 1, 0.5, None),
        (10, 5, 0.5, None),
        (10, 4, 0.5, "shrank from 10 to 4 records (more than 50%); publish with force to accept"),
        (10, 9, 0.0, "shrank from 10 to 9 records (more than 0%); publish with force to accept"),
        (10, 1, 1.0, None),
    ],
)
def test_refusal(previous: int, count: int, max_shrink: float, expected: str | None) -> None:
    assert refusal(previous, count, max_shrink) == expected


def test_info_keeps_the_callers_details_and_samples_skipped_files() -> None:
    skipped = [Skipped(f"f{i}.yml", "invalid YAML") for i in range(MAX_SKIP_SAMPLES + 5)]
    pub = Publication(
        source="demo",
        version="v1",
        version_id=1,
        records=[],
        skipped=skipped,
        lookup={},
        chunking=ChunkConfig(),
        access=PUBLIC,
        details={"commit": "abc"},
    )
    assert pub.info["commit"] == "abc"
    assert pub.info["skipped_sample"][0] == "f0.yml: invalid YAML"
    assert len(pub.info["skipped_sample"]) == MAX_SKIP_SAMPLES
