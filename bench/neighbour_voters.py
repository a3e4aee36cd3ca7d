"""Who votes in the neighbours leg: per query, the sources of its nearest documents and whether their labels
name the relevant technique (kNN label transfer as sql/queries/serving.sql leg_neighbours does it, exact scan).

    python bench/neighbour_voters.py --queries ../shared/eval/cti_dev_queries.jsonl \
        --database-url postgresql://... [--documents 5,20] [--chunks 40,100] [--exclude SOURCE,...] [--limit 0]

For each (documents, chunks) setting: the share of voters per source, how often a voter names the relevant
technique (its grade-2 document's technique), and P@1 / hit@10 of the vote alone (techniques ranked by the
leg's vote, a sub-technique's half going to its parent), which is what the leg can give the fusion.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quality import load_items  # noqa: E402

from pipeline.resources import EmbedderResource  # noqa: E402
from secrag.db import database  # noqa: E402

from build import settings_for  # noqa: E402

NEAREST = """
SELECT c.doc_id, d.source, d.techniques, (1 - (e.vector::vector(384) <=> %(q)s::vector(384)))::float8 AS sim
FROM embeddings e JOIN chunks c ON c.content_hash = e.content_hash JOIN documents d ON d.doc_id = c.doc_id
WHERE e.model_id = %(model)s AND d.source <> ALL(%(exclude)s::text[])
ORDER BY e.vector::vector(384) <=> %(q)s::vector(384)
LIMIT %(chunks)s
"""


def votes(near: list[tuple[str, str, list[str], float]], documents: int) -> tuple[list[tuple[str, float]], list[str]]:
    """(technique, vote) best first, and the voting documents' sources, as leg_neighbours counts them."""
    best: dict[str, tuple[float, str, list[str]]] = {}
    for doc_id, source, techniques, sim in near:
        if doc_id not in best or sim > best[doc_id][0]:
            best[doc_id] = (sim, source, techniques)
    chosen = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:documents]
    tally: dict[str, float] = defaultdict(float)
    for _, (sim, _, techniques) in chosen:
        for t in techniques or ():
            tally[t] += sim / len(techniques)
            if "." in t:
                tally[t.split(".", 1)[0]] += 0.5 * sim / len(techniques)
    return sorted(tally.items(), key=lambda kv: -kv[1]), [source for _, (_, source, _) in chosen]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--documents", default="5,20")
    ap.add_argument("--chunks", default="40,100")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--exclude", default="", help="comma-separated sources that do not vote (the store without them)")
    args = ap.parse_args()
    items = load_items(args.queries, args.limit)
    settings = settings_for(Path(".secrag/bench"))
    embedder = EmbedderResource(model=settings.embedding_model).embedder()
    embedder.load()
    vectors = embedder.encode_queries([item["query"] for item in items])
    settings_list = list(zip(map(int, args.documents.split(",")), map(int, args.chunks.split(",")), strict=True))
    most = max(c for _, c in settings_list)
    params = {"model": settings.embedding_model, "chunks": most, "exclude": [s for s in args.exclude.split(",") if s]}
    with database.connect(args.database_url, autocommit=True) as conn:
        nearest = [conn.execute(NEAREST, {**params, "q": str(list(map(float, v)))}).fetchall() for v in vectors]
    for documents, chunks in settings_list:
        sources: Counter[str] = Counter()
        named = p1 = hit10 = 0
        for item, near in zip(items, nearest, strict=True):
            wanted = {r["doc_id"].split(":", 1)[1] for r in item["relevant"] if r.get("grade", 1) >= 2}
            ranked, voters = votes([tuple(row) for row in near[:chunks]], documents)  # type: ignore[misc]
            sources.update(voters)
            named += any(t in wanted for t, _ in ranked)
            p1 += bool(ranked) and ranked[0][0] in wanted
            hit10 += any(t in wanted for t, _ in ranked[:10])
        n = len(items)
        total = sum(sources.values()) or 1
        share = ", ".join(f"{s} {c / total:.0%}" for s, c in sources.most_common(6))
        print(f"documents={documents} chunks={chunks}: vote P@1 {p1 / n:.3f}, hit@10 {hit10 / n:.3f}, ", end="")
        print(f"a voter names it {named / n:.3f}; voters: {share}")


if __name__ == "__main__":
    main()
