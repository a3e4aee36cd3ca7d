"""`secrag models fetch` against a loopback hub serving the tiny model's files: checksums verified, a wrong
one refused and deleted, idempotent, and the fetched model loads with no network."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from secrag.errors import ConfigError, FetchError
from secrag.models.fetch import fetch_model, file_url
from secrag.models.onnx_export import file_sha256
from secrag.models.registry import HubSource, ModelInfo, load_registry
from secrag.models.weights import hub_folder
from secrag.net.download_limits import DownloadLimits
from secrag.settings import get_settings
from tests.plugins.tiny_model import TINY, models_file_text
from tests.plugins.upstream import LoopbackPolicy, LoopbackServer

REVISION = "0123456789abcdef0123456789abcdef01234567"
FILES = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
)
LIMITS = DownloadLimits(retry_base=0.05, max_attempts=2)


def _hub_source(tiny_bert: Path, wrong: str = "") -> str:
    """The tiny model as a hub source: every file with its real sha256 (or a wrong one for `wrong`)."""
    pins = ", ".join(f"{name}: {'ab' * 32 if name == wrong else file_sha256(tiny_bert / name)}" for name in FILES)
    return f"{{hub: secrag-tests/tiny-bert, revision: {REVISION}, files: {{{pins}}}}}"


@pytest.fixture
def hub(http_server: LoopbackServer, tiny_bert: Path) -> LoopbackServer:
    """The loopback server as the hub: each file at <repo>/resolve/<revision>/<file>; the weights through a
    redirect to a content host, as the real hub answers."""
    source = HubSource(hub="secrag-tests/tiny-bert", revision=REVISION, files=dict.fromkeys(FILES, "ab" * 32))
    for name in FILES:
        path = file_url("", source, name)
        if name == "model.safetensors":
            http_server.redirect(path, http_server.url("/cdn/weights"))
            http_server.bytes("/cdn/weights", (tiny_bert / name).read_bytes())
        else:
            http_server.bytes(path, (tiny_bert / name).read_bytes())
    return http_server


def _model(tmp_path: Path, source: str) -> tuple[Path, ModelInfo]:
    path = tmp_path / "models.yaml"
    path.write_text(models_file_text(source), encoding="utf-8")
    return path, load_registry(path).get(TINY)


@pytest.fixture
def registered(tmp_path: Path, tiny_bert: Path) -> Iterator[Path]:
    """SECRAG_MODELS_FILE registering the tiny model as a hub model (for the encoders, which read it)."""
    path, _ = _model(tmp_path, _hub_source(tiny_bert))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SECRAG_MODELS_FILE", str(path))
        get_settings.cache_clear()
        yield path
    get_settings.cache_clear()


def test_fetch_verifies_each_file_and_is_idempotent(
    hub: LoopbackServer, tiny_bert: Path, tmp_path: Path, registered: Path
) -> None:
    from secrag.models.onnx_model import OnnxEncoder

    info = load_registry(registered).get(f"{TINY}-int8")  # an int8 id fetches its model's files
    models = tmp_path / "models"
    with pytest.raises(ConfigError, match="are not in") as caught:
        OnnxEncoder(TINY, models).load()
    assert f"secrag models fetch {TINY}" in caught.value.hint  # nothing downloads but the fetch

    first = fetch_model(info, models, LoopbackPolicy(), hub.base_url, limits=LIMITS, timeout=30.0)
    folder = hub_folder(info.source, models)  # type: ignore[arg-type]
    assert first.folder == folder and sorted(first.fetched) == sorted(FILES) and not first.kept
    for name in FILES:
        assert (folder / name).read_bytes() == (tiny_bert / name).read_bytes()
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []  # no partial file left
    requests = len(hub.requests)

    again = fetch_model(info, models, LoopbackPolicy(), hub.base_url, limits=LIMITS, timeout=30.0)
    assert sorted(again.kept) == sorted(FILES) and not again.fetched and len(hub.requests) == requests
    (folder / "tokenizer.json").write_text("{}")  # a damaged file is fetched again, and only it
    mended = fetch_model(info, models, LoopbackPolicy(), hub.base_url, limits=LIMITS, timeout=30.0)
    assert mended.fetched == ["tokenizer.json"] and file_sha256(folder / "tokenizer.json") == file_sha256(
        tiny_bert / "tokenizer.json"
    )

    encoder = OnnxEncoder(TINY, models)  # the fetched model exports and encodes offline
    vectors = encoder.encode_queries(["lsass memory dump"])
    assert vectors.shape == (1, 32) and np.isclose(np.linalg.norm(vectors), 1.0)


def test_a_wrong_checksum_is_refused_and_the_file_deleted(hub: LoopbackServer, tiny_bert: Path, tmp_path: Path) -> None:
    _, info = _model(tmp_path, _hub_source(tiny_bert, wrong="model.safetensors"))
    models = tmp_path / "models"
    with pytest.raises(FetchError, match="is not the registry's") as caught:
        fetch_model(info, models, LoopbackPolicy(), hub.base_url, limits=LIMITS, timeout=30.0)
    assert "the download was deleted" in str(caught.value) and caught.value.hint
    folder = hub_folder(info.source, models)  # type: ignore[arg-type]
    assert not (folder / "model.safetensors").exists()
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no partial download either
    assert (folder / "config.json").is_file()  # the files before it were right, and stay


def test_only_pinned_hub_models_are_fetched(hub: LoopbackServer, tmp_path: Path) -> None:
    bge = load_registry(None).get("bge-base-en-v1.5")
    with pytest.raises(ConfigError, match="pins no sha256 for 1_Pooling/config.json, config.json"):
        fetch_model(bge, tmp_path, LoopbackPolicy(), hub.base_url, limits=LIMITS, timeout=30.0)
    minilm = load_registry(None).get("all-MiniLM-L6-v2-int8")
    with pytest.raises(ConfigError, match="no hub source; its weights come from a package"):
        fetch_model(minilm, tmp_path, LoopbackPolicy(), hub.base_url, limits=LIMITS, timeout=30.0)
    assert not hub.requests and not (tmp_path / "hub").exists()
