"""A tiny BERT the tests build themselves (random weights from a fixed seed, a small WordPiece vocabulary of
their own), saved as a sentence-transformers folder with CLS pooling, and the models file registering it."""

from __future__ import annotations

import json
import string
from collections.abc import Iterator
from pathlib import Path

import pytest

TINY = "tiny-bert"
TINY_INT8 = "tiny-bert-int8"
DIMENSIONS = 32
MAX_TOKENS = 64
QUERY_PREFIX = "query: "
DOCUMENT_PREFIX = "passage: "
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = (
    "the a of and to in for with from by on is are be an as or at that this it its which query passage "
    "attack attacker adversary credential credentials dump dumping memory lsass mimikatz process injection "
    "powershell command script execution remote code vulnerability exploit windows linux microsoft apple "
    "google cisco oracle server service file system user access privilege escalation network malware "
    "ransomware phishing log4j jndi lookup allows could lead affected products versions cve kev known "
    "exploited unspecified improper input validation buffer overflow authentication bypass"
).split()
# Every letter and digit, alone and as a continuation, so any word splits into known pieces.
PIECES = [*string.ascii_lowercase, *string.digits, *string.punctuation]
VOCAB = [*SPECIAL, *PIECES, *(f"##{c}" for c in string.ascii_lowercase + string.digits), *sorted(set(WORDS))]


def build_tiny_bert(folder: Path, *, seed: int = 7) -> Path:
    """Write the model's folder: config.json, model.safetensors, vocab.txt and tokenizer files, and the
    sentence-transformers files (modules.json, sentence_bert_config.json, 1_Pooling/config.json: CLS)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=DIMENSIONS,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=MAX_TOKENS,
    )
    BertModel(config).eval().save_pretrained(folder)
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab={piece: i for i, piece in enumerate(VOCAB)}, do_lower_case=True).save_pretrained(folder)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules, indent=2), encoding="utf-8")
    sbert = {"max_seq_length": MAX_TOKENS, "do_lower_case": False}
    (folder / "sentence_bert_config.json").write_text(json.dumps(sbert), encoding="utf-8")
    pooling = {
        "word_embedding_dimension": DIMENSIONS,
        "pooling_mode_cls_token": True,
        "pooling_mode_mean_tokens": False,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
    }
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling, indent=2), encoding="utf-8")
    return folder


def models_file_text(source: str) -> str:
    """A models file registering the tiny model (with `source`, YAML flow) and its int8 model."""
    return (
        "models:\n"
        f"  - id: {TINY}\n"
        f"    source: {source}\n"
        "    pooling: cls\n"
        f"    dimensions: {DIMENSIONS}\n"
        f"    max_tokens: {MAX_TOKENS}\n"
        f'    query_prefix: "{QUERY_PREFIX}"\n'
        f'    document_prefix: "{DOCUMENT_PREFIX}"\n'
        f"  - id: {TINY_INT8}\n"
        f"    quantized_from: {TINY}\n"
    )


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model's folder (built once per session)."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def tiny_models_file(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """SECRAG_MODELS_FILE registering the tiny model from its folder, for the tests of one module."""
    from secrag.settings import get_settings

    path = tmp_path_factory.mktemp("models-file") / "models.yaml"
    path.write_text(models_file_text(f"{{directory: {tiny_bert}}}"), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SECRAG_MODELS_FILE", str(path))
        get_settings.cache_clear()
        yield path
    get_settings.cache_clear()
