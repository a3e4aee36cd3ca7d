"""The ECS flat-schema parser on the real snapshot: one record per field set, every field one line
under its dotted name, its names kept as identifiers."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.sources.parsers import ecs_flat
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT


@pytest.fixture(scope="module")
def outcome() -> ParseOutcome:
    return parse_source(default_registry()["ecs"], SNAPSHOT / "ecs")


@pytest.fixture(scope="module")
def by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def test_every_field_set_is_a_record(outcome: ParseOutcome) -> None:
    assert len(outcome.records) == 44 and not outcome.skipped
    assert sum(r.metadata["fields"] for r in outcome.records) == 2612  # every field of ecs_flat.yml


def test_the_process_field_set(by_id: dict[str, Record]) -> None:
    process = by_id["ecs:process"]
    assert process.title == "ECS process fields" and process.metadata["fields"] == 391
    assert process.url == "https://www.elastic.co/docs/reference/ecs/ecs-process"
    assert (
        "- process.command_line (wildcard, extended): Full command line that started the process. "
        "Example: /usr/bin/ssh -l user 10.0.0.16" in process.body
    )
    assert "process.command_line" in process.identifiers and "process.parent.pid" in process.identifiers


def test_top_level_fields_are_the_base_set_and_allowed_values_are_listed(by_id: dict[str, Record]) -> None:
    assert "- @timestamp (date, core): Date/time when the event originated." in by_id["ecs:base"].body
    assert "Allowed values: alert, asset, enrichment, event, metric, state, pipeline_error, signal." in (
        by_id["ecs:event"].body
    )


def test_a_field_that_is_not_a_mapping_is_refused() -> None:
    file = SourceFile(source="ecs", root=Path("/nonexistent"), rel="generated/ecs/ecs_flat.yml", data=b"a.b: 3\n")
    with pytest.raises(ParseError, match="not a mapping"):
        list(ecs_flat.parse(file))
