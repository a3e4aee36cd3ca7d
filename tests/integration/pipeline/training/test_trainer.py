"""One training of the sentence model in a real store with the real general model: 40 procedure examples of 8
techniques by 10 actors and the 8 techniques' documents, a tiny recipe, a models folder of its own. The trained
folder, its registration, its record, its vectors, its reuse, its gate, and the fine-tune's determinism."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pipeline.chunking import ChunkConfig
from pipeline.embedding import embed_pending
from pipeline.sources.records import Record
from pipeline.store import SourceRow, Store
from pipeline.training import promotion
from pipeline.training.examples import held_back, read_labelled
from pipeline.training.fine_tune import Recipe, fine_tune
from pipeline.training.trainer import GATE_FIGURE, Encoders, TrainingConfig, train_sentence_model
from secrag.files.package_data import sql_dir
from secrag.models.embedder import TextModel
from secrag.models.encoders import document_encoder
from secrag.models.registry import model_info, registry
from secrag.models.trained import MANIFEST, int8_id, trained_folder, trained_id
from secrag.models.weights import weights_dir
from secrag.settings import Settings, get_settings

SQL = sql_dir()
GENERAL = "all-MiniLM-L6-v2-int8"  # the default embedding model: the baseline while nothing is promoted
GENERAL_FP32 = "all-MiniLM-L6-v2"
RECIPE = Recipe(steps=2, batch_size=4, warmup_steps=1)
HOLDOUT = 6  # of G0001..G0010 it holds back G0004 and G0005

# (technique, name, tactic, description, five procedure examples' phrases)
TECHNIQUES = [
    (
        "T1059",
        "Command and Scripting Interpreter",
        "Execution",
        "Adversaries may abuse command and script interpreters to execute commands, scripts, or binaries.",
        [
            "has used cmd.exe to run commands on compromised hosts.",
            "executed batch scripts through the Windows command shell.",
            "used a Unix shell to run reconnaissance commands.",
            "ran VBScript and JScript files with wscript.",
            "has used command-line interpreters to launch its payloads.",
        ],
    ),
    (
        "T1059.001",
        "PowerShell",
        "Execution",
        "Adversaries may abuse PowerShell commands and scripts for execution.",
        [
            "has used PowerShell scripts to download and run malware.",
            "executed encoded PowerShell commands with -EncodedCommand.",
            "used PowerShell to load Mimikatz into memory.",
            "ran PowerShell one-liners with the execution policy bypassed.",
            "has used PowerShell Empire for post-exploitation.",
        ],
    ),
    (
        "T1003.001",
        "LSASS Memory",
        "Credential Access",
        "Adversaries may access credential material stored in the process memory of the Local Security "
        "Authority Subsystem Service (LSASS).",
        [
            "dumped LSASS process memory with ProcDump.",
            "used Mimikatz sekurlsa to harvest credentials from LSASS.",
            "created a minidump of lsass.exe with comsvcs.dll.",
            "has stolen credentials from the memory of the LSASS process.",
            "used a custom tool to read passwords from LSASS memory.",
        ],
    ),
    (
        "T1566.001",
        "Spearphishing Attachment",
        "Initial Access",
        "Adversaries may send spearphishing emails with a malicious attachment in an attempt to gain access to "
        "victim systems.",
        [
            "sent emails with malicious Word documents attached.",
            "has delivered weaponized PDF attachments to targets.",
            "used spearphishing emails carrying macro-enabled Excel files.",
            "sent ZIP archives containing malicious LNK files by email.",
            "targeted employees with phishing emails that had infected attachments.",
        ],
    ),
    (
        "T1547.001",
        "Registry Run Keys / Startup Folder",
        "Persistence",
        "Adversaries may achieve persistence by adding a program to a startup folder or referencing it with a "
        "Registry run key.",
        [
            "added a Run key to the registry to start its backdoor at logon.",
            "placed a shortcut to its malware in the Startup folder.",
            "created the HKCU Run value to persist.",
            "has used registry run keys to establish persistence.",
            "wrote its loader to the RunOnce registry key.",
        ],
    ),
    (
        "T1071.001",
        "Web Protocols",
        "Command and Control",
        "Adversaries may communicate using application layer protocols associated with web traffic to avoid detection.",
        [
            "used HTTP for command and control communications.",
            "has communicated with its C2 server over HTTPS.",
            "sent beacons to the controller in HTTP POST requests.",
            "hid its command traffic in ordinary web requests.",
            "used HTTP GET requests to receive tasks from its server.",
        ],
    ),
    (
        "T1486",
        "Data Encrypted for Impact",
        "Impact",
        "Adversaries may encrypt data on target systems or on large numbers of systems in a network to interrupt "
        "availability.",
        [
            "deployed ransomware that encrypted files on the victims' servers.",
            "encrypted the file systems of compromised hosts with AES and RSA.",
            "has used ransomware to encrypt data and demand payment.",
            "encrypted virtual machine disks on ESXi hosts.",
            "ran a locker that appended a new extension to every encrypted file.",
        ],
    ),
    (
        "T1105",
        "Ingress Tool Transfer",
        "Command and Control",
        "Adversaries may transfer tools or other files from an external system into a compromised environment.",
        [
            "downloaded additional tools to the victim with certutil.",
            "used bitsadmin to fetch payloads from a remote server.",
            "has transferred its tools to compromised hosts over SMB.",
            "used curl to pull a second-stage payload.",
            "uploaded a web shell and further tools to the server.",
        ],
    ),
]
ACTORS = [
    (f"G{i:04d}", name)
    for i, name in enumerate(
        ["APT1", "APT3", "FIN6", "FIN7", "Lazarus", "Turla", "Sandworm", "Kimsuky", "OilRig", "MuddyWater"], start=1
    )
]


def _technique_records() -> list[Record]:
    return [
        Record(
            source="mitre_attack",
            upstream_id=tid,
            title=name,
            body=f"Tactics: {tactic}\nPlatforms: Windows, Linux\n{description}",
            techniques=(tid,),
            metadata={"kind": "sub-technique" if "." in tid else "technique"},
        )
        for tid, name, tactic, description, _ in TECHNIQUES
    ]


def _procedure_records() -> list[Record]:
    records = []
    for i, (tid, name, _, _, phrases) in enumerate(TECHNIQUES):
        for j, phrase in enumerate(phrases):
            actor_id, actor = ACTORS[(i + 3 * j) % len(ACTORS)]
            records.append(
                Record(
                    source="mitre_attack_procedures",
                    upstream_id=f"relationship--{i}-{j}",
                    title=f"{actor} ({actor_id}) uses {tid} {name}",
                    body=f"{actor} {phrase}",
                    techniques=(tid,),
                    metadata={"kind": "procedure", "actor_id": actor_id, "actor_name": actor},
                )
            )
    return records


def _encoders(models_dir: Path) -> Encoders:
    def encoders(model_id: str) -> TextModel:
        return document_encoder(model_id, batch_size=16, threads=1, cache_dir=models_dir)

    return encoders


@pytest.fixture
def models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A models folder of its own, as the process's settings name it (the registry reads trained models from
    it), holding the suite's ONNX exports of the general model (made again here when the suite has none)."""
    suite = Settings(_env_file=None).models_dir  # type: ignore[call-arg]
    folder = tmp_path / "models"
    folder.mkdir()
    for export in sorted(suite.glob(f"{GENERAL_FP32}-*.onnx*")):
        (folder / export.name).symlink_to(export)
    monkeypatch.setenv("SECRAG_MODEL_CACHE_DIR", str(folder))
    monkeypatch.delenv("SECRAG_MODELS_FILE", raising=False)
    get_settings.cache_clear()
    yield folder
    get_settings.cache_clear()


@pytest.fixture
def published(db: psycopg.Connection) -> psycopg.Connection:
    """The store: both ATT&CK sources published."""
    store = Store(SQL)
    for source, records in (("mitre_attack", _technique_records()), ("mitre_attack_procedures", _procedure_records())):
        store.register_source(db, SourceRow(name=source, kind="static"))
        store.publish(db, source=source, version="v18.1", records=records, lookup={}, chunking=ChunkConfig())
    return db


@pytest.fixture
def labelled(published: psycopg.Connection, models_dir: Path) -> psycopg.Connection:
    """The published store embedded with the general model, as the pipeline leaves it before a training."""
    for source in promotion.SOURCES:
        embed_pending(published, _encoders(models_dir)(GENERAL), SQL, source=source)
    return published


def _config(models_dir: Path) -> TrainingConfig:
    return TrainingConfig(base_model=GENERAL, models_dir=models_dir, recipe=RECIPE, holdout=HOLDOUT, min_examples=20)


def _attack_chunks(db: psycopg.Connection) -> int:
    row = db.execute("SELECT count(*) FROM chunks WHERE source = ANY(%s)", [list(promotion.SOURCES)]).fetchone()
    assert row is not None
    return int(row[0])


def test_the_store_holds_the_labelled_data_split_by_actor(published: psycopg.Connection) -> None:
    data = read_labelled(published, SQL, holdout=HOLDOUT)
    assert {e.actor for e in data.validation} == {"G0004", "G0005"}
    assert data.counts() == {"train_examples": 31, "validation_examples": 9, "validation_actors": 2, "techniques": 8}
    assert data.versions == {"mitre_attack": "v18.1", "mitre_attack_procedures": "v18.1"}
    technique = next(t for t in data.techniques if t.technique == "T1059.001")
    assert technique.text == "PowerShell. Adversaries may abuse PowerShell commands and scripts for execution."
    example = next(e for e in data.train if e.text.startswith("APT1 has used cmd.exe"))
    assert (example.technique, example.actor) == ("T1059", "G0001")
    assert all(held_back(e.actor, HOLDOUT) for e in data.validation)


def test_too_few_examples_are_refused_before_any_training(published: psycopg.Connection, models_dir: Path) -> None:
    config = TrainingConfig(base_model=GENERAL, models_dir=models_dir, recipe=RECIPE, holdout=HOLDOUT, min_examples=32)
    with pytest.raises(ValueError, match="31 procedure examples to train on, fewer than 32"):
        train_sentence_model(published, SQL, config, _encoders(models_dir))
    assert not (models_dir / "trained").exists()
    assert promotion.trained(published, SQL) == []


def test_a_training_registers_embeds_records_and_promotes_only_a_passing_model(
    labelled: psycopg.Connection, models_dir: Path
) -> None:
    db = labelled
    data = read_labelled(db, SQL, holdout=HOLDOUT)
    lines: list[str] = []
    first = train_sentence_model(db, SQL, _config(models_dir), _encoders(models_dir), progress=lines.append)

    # the id is the inputs': the general model's fp32 weights, the recipe, the data
    assert first.model_id == trained_id(GENERAL_FP32, RECIPE.as_dict(), data.digest())
    assert first.served_model == int8_id(first.model_id) and first.trained
    assert lines[0].startswith(f"training {first.model_id} from {GENERAL_FP32} on 31 examples (2 steps)")
    assert lines[-1].startswith("step 2/2: loss ")
    folder = trained_folder(models_dir, first.model_id)
    assert {"models.yaml", MANIFEST, "model.safetensors", "tokenizer.json", "1_Pooling/config.json"} <= {
        str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()
    }
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["base_model"] == GENERAL_FP32 and manifest["recipe"] == RECIPE.as_dict()
    assert manifest["data_digest"] == data.digest() and manifest["counts"] == data.counts() == first.counts
    assert manifest["train_seconds"] == first.train_seconds
    assert not list(models_dir.glob("trained/*.partial"))

    # registered from its folder, with its int8 export, shaped like the general model
    assert registry().get(first.model_id).dimensions == model_info(GENERAL_FP32).dimensions
    assert registry().get(first.served_model).quantized_from == first.model_id
    assert weights_dir(model_info(first.model_id), models_dir) == folder

    # its vectors cover both ATT&CK sources; the other model's are untouched
    assert first.embedded == _attack_chunks(db) == 48
    assert promotion.coverage(db, SQL, first.served_model) == 0
    assert promotion.coverage(db, SQL, GENERAL) == 0

    # validated against the general model, from the stored vectors
    assert first.baseline_model == GENERAL
    assert first.validation["examples"] == first.baseline["examples"] == 9
    for figures in (first.validation, first.baseline):
        assert set(figures) == {
            f"{r}_{f}" for r in ("vote", "documents", "both") for f in ("ndcg10", "p1", "recall10")
        } | {"examples"}
        assert all(0.0 <= v <= 1.0 for k, v in figures.items() if k != "examples")
    # which way the gate goes on this store is test_quality_gate's: there the outcome is known by construction
    assert first.promoted == first.passed  # nothing was promoted before: a pass promotes

    # recorded with its lineage and figures
    (row,) = promotion.trained(db, SQL)
    assert (row.model_id, row.served_model, row.base_model, row.replaces) == (
        first.model_id,
        first.served_model,
        GENERAL_FP32,
        None,
    )
    assert (row.attack_version, row.data_digest, row.recipe) == ("v18.1", data.digest(), RECIPE.as_dict())
    assert row.validation == first.validation and row.baseline == first.baseline and row.passed == first.passed
    assert row.status == ("promoted" if first.promoted else "rejected")
    served = promotion.promoted(db, SQL)
    assert (served.model_id if served else None) == (first.model_id if first.promoted else None)

    # the same inputs again: the same model, reused, nothing left to embed
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    again = train_sentence_model(db, SQL, _config(models_dir), _encoders(models_dir), progress=lines.append)
    assert (again.model_id, again.trained, again.embedded) == (first.model_id, False, 0)
    assert lines[-1] == f"{first.model_id} was trained before from the same inputs: reused"
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp
    assert again.train_seconds == first.train_seconds and again.validation == first.validation
    if first.promoted:  # it serves now, so it is its own baseline: passed, nothing to promote
        assert (again.baseline_model, again.baseline, again.passed, again.promoted) == (
            first.served_model,
            first.validation,
            True,
            False,
        )
    else:  # still compared with the general model, still short of the gate
        assert (again.baseline_model, again.baseline, again.passed, again.promoted) == (
            GENERAL,
            first.baseline,
            False,
            False,
        )
    assert [m.model_id for m in promotion.trained(db, SQL)] == [first.model_id]


def test_the_gate_compares_with_the_promoted_model(labelled: psycopg.Connection, models_dir: Path) -> None:
    """A trained model already serves (its vectors those of the general fp32 model here): the new one is
    validated against it, replaces it only when it beats it, and is recorded as its successor either way."""
    db = labelled
    for source in promotion.SOURCES:
        embed_pending(db, _encoders(models_dir)(GENERAL_FP32), SQL, source=source)
    serving = "attack-minilm-0000000000"
    promotion.record_trained(
        db,
        SQL,
        promotion.TrainedModel(
            model_id=serving,
            served_model=GENERAL_FP32,
            base_model=GENERAL_FP32,
            data_digest="00" * 32,
            recipe={},
            validation={GATE_FIGURE: 1.0},  # its recorded figures are not the gate's: the gate measures again
            baseline={},
            passed=True,
        ),
    )
    assert promotion.promote(db, SQL, serving).changed

    outcome = train_sentence_model(db, SQL, _config(models_dir), _encoders(models_dir))
    assert outcome.baseline_model == GENERAL_FP32 and outcome.trained
    assert outcome.baseline["examples"] == 9 and outcome.baseline != {GATE_FIGURE: 1.0}
    assert outcome.promoted == outcome.passed
    rows = {m.model_id: m for m in promotion.trained(db, SQL)}
    assert rows[outcome.model_id].replaces == serving
    assert rows[outcome.model_id].baseline == outcome.baseline
    if outcome.promoted:
        assert (rows[outcome.model_id].status, rows[serving].status) == ("promoted", "retired")
    else:
        assert (rows[outcome.model_id].status, rows[serving].status) == ("rejected", "promoted")


def test_the_same_inputs_fine_tune_to_the_same_weights(published: psycopg.Connection, tmp_path: Path) -> None:
    pairs = read_labelled(published, SQL, holdout=HOLDOUT).pairs()
    base = weights_dir(model_info(GENERAL_FP32), tmp_path)
    steps: list[tuple[int, int]] = []
    one = fine_tune(base, pairs, RECIPE, tmp_path / "one", progress=lambda step, n, loss: steps.append((step, n)))
    two = fine_tune(base, pairs, RECIPE, tmp_path / "two")
    other = fine_tune(base, pairs, Recipe(steps=2, batch_size=4, warmup_steps=1, seed=7), tmp_path / "other")
    weights = {p.name: (p / "model.safetensors").read_bytes() for p in (one, two, other)}
    assert weights["one"] == weights["two"]
    assert weights["other"] != weights["one"]  # another seed: other batches, other weights
    assert weights["one"] != (base / "model.safetensors").read_bytes()  # it did train
    assert steps == [(2, 2)]  # progress on the last step
    for name in ("config.json", "tokenizer.json", "vocab.txt", "modules.json", "1_Pooling/config.json"):
        assert (one / name).read_bytes() == (base / name).read_bytes()
    assert not (tmp_path / "one.partial").exists()
