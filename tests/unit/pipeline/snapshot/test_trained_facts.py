"""The trained model a snapshot's manifest describes: every file name stays inside the models folder, a damaged
entry is refused with a sentence, a snapshot without one parses as before, and a model file's declared size and
checksum are checked like every part's."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pipeline.snapshot.manifest import MANIFEST, parse_manifest
from pipeline.snapshot.reading import read_header, verify_parts
from pipeline.snapshot.trained_facts import MAX_FILES, ModelFile, TrainedFacts, member_name, parse_trained
from secrag.errors import SnapshotRefused

from .test_reading import PARTS, manifest_of, write

MODEL = "attack-minilm-0123456789"
SERVED = f"{MODEL}-int8"
EXPORT = f"{SERVED}-0123456789ab.onnx"
WEIGHTS = b"weights" * 100
ONNX = b"onnx" * 100
RECORD = {
    "replaces": None,
    "attack_version": "v18.1",
    "data_digest": "d",
    "recipe": {"steps": 1},
    "validation": {"both_ndcg10": 0.5},
    "baseline": {"both_ndcg10": 0.4},
    "passed": True,
    "trained_at": "2026-12-01T00:00:00+00:00",
    "train_seconds": 1.5,
}


def entry(kind: str, path: str, data: bytes, **changes: Any) -> dict[str, Any]:  # noqa: ANN401
    return {
        "kind": kind,
        "path": path,
        "member": member_name(MODEL, kind, path),  # type: ignore[arg-type]
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        **changes,
    }


def raw(*files: dict[str, Any], **changes: Any) -> dict[str, Any]:  # noqa: ANN401
    files = files or (entry("weights", "model.safetensors", WEIGHTS), entry("int8", EXPORT, ONNX))
    return {
        "model_id": MODEL,
        "served_model": SERVED,
        "base_model": "all-MiniLM-L6-v2",
        "dimensions": 384,
        "record": RECORD,
        "files": list(files),
        **changes,
    }


def test_a_sound_entry_parses_and_none_is_no_model() -> None:
    facts = parse_trained(raw())
    assert facts is not None and facts.export.path == EXPORT and facts.served_model == SERVED
    assert [f.member for f in facts.files] == [f"models/trained/{MODEL}/model.safetensors", f"models/{EXPORT}"]
    assert parse_trained(None) is None
    older = json.loads(manifest_of(PARTS).to_bytes())
    del older["trained"]  # a snapshot exported before models travelled
    assert parse_manifest(json.dumps(older).encode()).trained is None


@pytest.mark.parametrize(
    ("damaged", "says"),
    [
        (raw(entry("weights", "../../../etc/cron.d/x", WEIGHTS), entry("int8", EXPORT, ONNX)), "not a relative path"),
        (raw(entry("weights", "/etc/passwd", WEIGHTS), entry("int8", EXPORT, ONNX)), "not a relative path"),
        (raw(entry("weights", "a\\..\\b", WEIGHTS), entry("int8", EXPORT, ONNX)), "not a relative path"),
        (raw(entry("weights", "a//b", WEIGHTS), entry("int8", EXPORT, ONNX)), "plain form"),
        (raw(entry("weights", "models.yaml", WEIGHTS), entry("int8", EXPORT, ONNX)), "written by the import"),
        (raw(entry("weights", "w", WEIGHTS, member="models/w"), entry("int8", EXPORT, ONNX)), "is not stored as"),
        (raw(entry("weights", "w", WEIGHTS), entry("int8", "../x.onnx", ONNX)), "not a relative path"),
        (raw(entry("weights", "w", WEIGHTS), entry("int8", "other-0123456789ab.onnx", ONNX)), "not the int8 export"),
        (raw(entry("weights", "w", WEIGHTS)), "not one int8 export"),
        (raw(*(entry("weights", f"f{i}", WEIGHTS) for i in range(MAX_FILES)), entry("int8", EXPORT, ONNX)), "files"),
        (raw(entry("weights", "w", WEIGHTS, bytes=-1), entry("int8", EXPORT, ONNX)), "bytes"),
        (raw(served_model="other-int8"), "is not"),
        (raw(model_id="../x"), "not a model id"),
        (raw(record={**RECORD, "status": "promoted"}), "other fields"),
        (raw(record={**RECORD, "passed": "yes"}), "record.passed"),
    ],
)
def test_a_damaged_entry_is_refused(damaged: dict[str, Any], says: str) -> None:
    with pytest.raises(SnapshotRefused, match=says):
        parse_trained(damaged)


def facts() -> TrainedFacts:
    files = tuple(
        ModelFile(kind, path, member_name(MODEL, kind, path), len(data), hashlib.sha256(data).hexdigest())  # type: ignore[arg-type]
        for kind, path, data in (("weights", "model.safetensors", WEIGHTS), ("int8", EXPORT, ONNX))
    )
    return TrainedFacts(MODEL, SERVED, "all-MiniLM-L6-v2", 384, RECORD, files)


def snapshot_with_model(path: Path, trained: TrainedFacts, weights: bytes = WEIGHTS) -> Path:
    manifest = replace(manifest_of(PARTS), trained=trained)
    members = [(MANIFEST, manifest.to_bytes())] + [(f"parts/{t}.copy", d) for t, d in PARTS.items()]
    return write(path, members + [(trained.files[0].member, weights), (trained.files[1].member, ONNX)])


def test_a_model_file_is_checked_like_a_part(tmp_path: Path) -> None:
    sound = snapshot_with_model(tmp_path / "sound.tar", facts())
    verify_parts(sound, read_header(sound, None))
    changed = snapshot_with_model(tmp_path / "changed.tar", facts(), weights=WEIGHTS[:-1] + b"X")
    with pytest.raises(SnapshotRefused, match=f"models/trained/{MODEL}/model.safetensors does not match its checksum"):
        verify_parts(changed, read_header(changed, None))
    huge = replace(facts(), files=(replace(facts().files[0], bytes=2**40), facts().files[1]))
    with pytest.raises(SnapshotRefused, match="declares 1099511627776 bytes"):
        read_header(snapshot_with_model(tmp_path / "huge.tar", huge), None)
