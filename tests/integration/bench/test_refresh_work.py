"""bench/refresh_work.py on small real data: one change of each kind (a touched commit, a touched release
with the ATT&CK lookup, a KEV entry in a new feed version), refreshed and embedded as the assets do, each
phase timed, then undone through normal refreshes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pipeline.resources import StoreResource
from secrag.models.embedder import TextModel
from secrag.models.encoders import document_encoder
from tests.plugins.tiny_model import TINY
from tests.plugins.upstream import SNAPSHOT

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # a script beside its siblings
import refresh_work as rw  # noqa: E402

SOURCES = "cisa_kev,mitre_attack,mitre_car"
KEV_FEED = Path("cisa_kev/data/known_exploited_vulnerabilities.json")
KEV_ENTRIES = 40


@pytest.fixture(scope="module")
def tiny_encoder(tiny_models_file: Path, tmp_path_factory: pytest.TempPathFactory) -> TextModel:
    """The tests' tiny BERT (tests/plugins/tiny_model.py) through the pipeline's own ONNX encoder: a real model,
    small enough that the bench's phases, not the embedding, take the time."""
    encoder = document_encoder(TINY, batch_size=64, threads=1, cache_dir=tmp_path_factory.mktemp("tiny-onnx"))
    encoder.load()
    return encoder


@pytest.fixture
def snapshot(small_snapshot: Path, tmp_path: Path) -> Path:
    """The small snapshot's ATT&CK and CAR, and the real KEV feed cut to its first entries."""
    target = tmp_path / "snapshot"
    target.mkdir()
    for name in ("mitre_attack", "mitre_car"):
        (target / name).symlink_to(small_snapshot / name)
    feed = json.loads((SNAPSHOT / KEV_FEED).read_bytes())
    feed["vulnerabilities"] = feed["vulnerabilities"][:KEV_ENTRIES]
    feed["count"] = KEV_ENTRIES
    (target / KEV_FEED).parent.mkdir(parents=True)
    (target / KEV_FEED).write_text(json.dumps(feed, indent=2), encoding="utf-8")
    return target


def test_one_change_per_kind_is_refreshed_embedded_timed_and_undone(
    db_url: str, snapshot: Path, tmp_path: Path, tiny_encoder: TextModel
) -> None:
    specs = rw.selected(SOURCES)
    names = [s.name for s in specs]
    mirror = rw.mirror_of(snapshot, tmp_path, names)
    store = StoreResource(database_url=db_url, work_dir=str(tmp_path / "work"))
    with store.connect() as conn:
        bench = rw.Bench(conn, store, rw.upstream_of(mirror), tiny_encoder, 256)
        rows = rw.run(bench, mirror, specs, revert=lambda: rw.mirror_of(snapshot, tmp_path, names))
        again = [rw.refresh_once(bench, spec, "settle") for spec in specs]
        left = conn.execute("SELECT count(*) FROM documents WHERE body LIKE '%quokka%' OR title LIKE '%Quokka%'")
        served = dict(conn.execute("SELECT name, current_version FROM sources").fetchall())
    by_step = {step: {r.source: r for r in rows if r.step == step} for step in ("settle", "change", "revert")}
    assert all(r.status == "published" for r in by_step["settle"].values())  # an empty store: the first build
    change, revert = by_step["change"], by_step["revert"]

    def counts(row: rw.Row) -> tuple[int, int, int]:
        return row.added, row.modified, row.removed

    assert {n: (counts(change[n]), counts(revert[n])) for n in names} == {
        "cisa_kev": ((1, 0, 0), (0, 0, 1)),  # a new KEV entry, then gone again
        "mitre_attack": ((0, 1, 0), (0, 1, 0)),
        "mitre_car": ((0, 1, 0), (0, 1, 0)),
    }
    for row in [*change.values(), *revert.values()]:
        assert row.status == "published" and {"fetch", "parse", "publish", "embed", "other"} <= row.seconds.keys()
        assert row.total > 0
    assert all(1 <= r.embedded <= 3 for r in change.values()), change  # only the changed record's chunks
    assert all(r.embedded == 0 for r in revert.values()), revert  # the snapshot's vectors are still stored
    assert "lookup" in change["mitre_attack"].seconds and "lookup" not in change["mitre_car"].seconds
    assert change["mitre_car"].change.startswith("touched mitre_car:") and "Quokka" in change["cisa_kev"].change
    assert [(r.status, r.embedded) for r in again] == [("unchanged", 0)] * 3
    assert left.fetchone()[0] == 0 and served["mitre_car"] == mirror.head("mitre_car")
