"""bench/scale.py's growth on small real data: the small graph's store grown both ways, near-duplicate copies and
mixed notes, to about twice its chunks, every new chunk with a vector of the active model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.plugins.graph import Harness

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # a script beside bench/lib
import scale  # noqa: E402

UNEMBEDDED = (
    "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e"
    " WHERE e.content_hash = c.content_hash AND e.model_id = %s)"
)


@pytest.mark.parametrize("texts", ["copies", "mixed"])
def test_a_store_grows_to_its_target_with_a_vector_for_every_chunk(texts: str, built: Harness) -> None:
    with built.connect() as conn:
        model = conn.execute("SELECT model_id FROM embedding_models WHERE active").fetchone()[0]
        conn.execute("DELETE FROM embeddings WHERE model_id <> %s", [model])  # as scale.py's measure() does
        base = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        if texts == "mixed":
            scale.grow_mixed(conn, model, base, 2 * base)
        else:
            scale.grow(conn, model, base, 2 * base, 0.015)
        grown = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        unembedded = conn.execute(UNEMBEDDED, [model]).fetchone()[0]
        copies = conn.execute("SELECT count(*) FROM documents WHERE doc_id LIKE '%~1'").fetchone()[0]
    assert base > 0 and 2 * base <= grown < 3 * base
    assert unembedded == 0 and copies > 0
