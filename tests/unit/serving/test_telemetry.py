"""The logsource -> telemetry-schema table: every doc id exists in the real snapshot, the most specific
entries win, and a bad file is a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.sources.parsing import parse_source
from pipeline.sources.registry import default_registry
from secrag.errors import ConfigError
from serving.plans.telemetry import load_telemetry
from tests.plugins.upstream import SNAPSHOT


def test_every_mapped_record_exists_in_the_snapshot() -> None:
    known = {
        r.doc_id
        for name in ("ossem_dd", "ecs")
        for r in parse_source(default_registry()[name], SNAPSHOT / name).records
    }
    mapped = {doc_id for m in load_telemetry().mappings for doc_id in m.schemas}
    assert mapped and sorted(mapped - known) == []


def test_the_most_specific_entries_win() -> None:
    table = load_telemetry()
    process = table.schemas_for({"product": "windows", "category": "process_creation"})
    assert process[0] == "ossem_dd:windows/sysmon/events/event-1.yml" and "ecs:process" in process
    assert "ossem_dd:windows/microsoftdefenderforendpoint/events/DeviceProcessEvents_v1.yml" in process
    assert table.schemas_for({"product": "Linux", "category": "PROCESS_CREATION"})[0].startswith("ossem_dd:linux/")
    assert table.schemas_for({"product": "windows", "category": "proxy"}) == ["ecs:http", "ecs:url", "ecs:user_agent"]
    assert table.schemas_for({"product": "okta", "service": "okta"}) == []


def test_a_doc_id_of_another_source_is_refused_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "telemetry.yaml"
    bad.write_text("mappings:\n  - logsource: {product: windows}\n    schemas: [sigma:abc]\n")
    with pytest.raises(ConfigError, match="telemetry.yaml.*line 3|sigma:abc"):
        load_telemetry(bad)
