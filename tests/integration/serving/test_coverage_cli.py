"""`secrag coverage --layer FILE --out FILE [--gaps]` (secrag_cli/coverage.py) against the serving corpus: the
coverage of a Navigator layer's techniques as the API answers it, written as a layer (or only its gaps), and the
files it refuses."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from secrag_cli.coverage import coverage
from serving.settings import ServingSettings
from tests.unit.serving.test_layer_reading import layer_file
from tests.unit.serving.test_map_layer import assert_valid_layer


@pytest.fixture
def configured(
    serving_db_url: str, settings_for: Callable[..., ServingSettings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command's settings: the corpus store's (as SECRAG_* variables would give them)."""
    monkeypatch.setattr("serving.settings.get_serving_settings", lambda: settings_for(serving_db_url))


def written(tmp_path: Path, name: str, content: Any) -> Path:  # noqa: ANN401
    path = tmp_path / name
    path.write_text(json.dumps(content), encoding="utf-8")
    return path


@pytest.mark.usefixtures("configured")
def test_the_layers_coverage_and_its_gaps_are_written_as_the_api_answers(client: TestClient, tmp_path: Path) -> None:
    api = client.post("/v1/coverage", json={"technique_layer": layer_file("apt28_4_4.json")}).json()
    source = written(tmp_path, "in.json", [layer_file("apt28_4_4.json")])  # the Navigator's list of one layer
    whole, gaps = tmp_path / "coverage.json", tmp_path / "gaps.json"
    ran = CliRunner().invoke(coverage, ["--layer", str(source), "--out", str(whole)])
    assert ran.exit_code == 0, ran.output
    assert json.loads(whole.read_text(encoding="utf-8")) == api["layer"]
    assert f"{len(api['techniques'])} techniques, {len(api['gaps']['no_detection'])} with no detection" in ran.output
    assert "left out of layer 'APT28 (G0007)': 1 revoked (T1002); 1 deprecated (T1064); 1 disabled (T1059.003)" in (
        ran.output
    )
    ran = CliRunner().invoke(coverage, ["--layer", str(source), "--out", str(gaps), "--gaps"])
    assert ran.exit_code == 0 and f"The gaps' layer written to {gaps}" in ran.output, ran.output
    layer = json.loads(gaps.read_text(encoding="utf-8"))
    assert_valid_layer(layer)
    assert [t["techniqueID"] for t in layer["techniques"]] == api["gaps"]["no_detection"]
    assert layer["name"] == "secrag coverage of APT28 (G0007): gaps"
    as_json = CliRunner().invoke(coverage, ["--layer", str(source), "--json"])
    answer = json.loads(as_json.output)
    assert answer["techniques"] == api["techniques"] and answer["technique_layer"] == api["technique_layer"]


@pytest.mark.usefixtures("configured")
@pytest.mark.parametrize(
    ("content", "said"),
    [
        ([layer_file("apt28_4_4.json")] * 2, "holds 2 layers: save the one to read on its own"),
        (
            {**layer_file("apt28_4_4.json"), "versions": {"layer": "4.3"}},
            "versions.layer: Value error, layer format '4.3'",
        ),
        ({"name": "x", "techniques": []}, "domain: Field required"),
        ("not a layer", "is not a layer this reads"),
    ],
)
def test_a_file_that_is_not_one_readable_layer_is_a_usage_error(tmp_path: Path, content: Any, said: str) -> None:  # noqa: ANN401
    ran = CliRunner().invoke(coverage, ["--layer", str(written(tmp_path, "in.json", content))])
    assert ran.exit_code == 2 and said in ran.output, ran.output


@pytest.mark.usefixtures("configured")
def test_a_layer_of_nothing_known_fails_saying_what_was_left_out(tmp_path: Path) -> None:
    layer = {"name": "old", "domain": "enterprise-attack", "techniques": [{"techniqueID": "T1002"}]}
    ran = CliRunner().invoke(coverage, ["--layer", str(written(tmp_path, "in.json", layer))])
    assert ran.exit_code == 1 and "no technique of layer 'old'" in ran.output and "1 revoked" in ran.output
