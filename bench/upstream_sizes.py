"""Per source, the size of the records' upstream forms kept for refetch (document_raw, migration 0013).

    python bench/upstream_sizes.py --database-url URL [--json]

Prints per source: the documents, how many have a stored form and how many of those are their whole
upstream file, the forms' total size uncompressed and as stored (zlib), the compression ratio, and the
median and largest single record (what one GET /v1/docs/{doc_id}/upstream returns).
"""

from __future__ import annotations

import argparse
import json

from secrag.db import database

SIZES = """
SELECT d.source,
       count(*) AS documents,
       count(r.doc_id) AS stored,
       count(*) FILTER (WHERE r.whole_file) AS whole_files,
       coalesce(sum(r.size), 0) AS raw_bytes,
       coalesce(sum(octet_length(r.raw)), 0) AS stored_bytes,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY r.size) AS median_bytes,
       max(r.size) AS max_bytes,
       string_agg(DISTINCT r.media_type, ', ') AS media_types
FROM documents d
JOIN sources s ON s.name = d.source AND s.kind = 'online'
LEFT JOIN document_raw r ON r.doc_id = d.doc_id
GROUP BY d.source
ORDER BY d.source
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with database.connect(args.database_url) as conn:
        cur = conn.execute(SIZES)
        names = [c.name for c in cur.description or ()]
        rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        table = conn.execute("SELECT pg_total_relation_size('document_raw')").fetchone()
    total_size = table[0] if table else 0
    if args.json:
        print(json.dumps({"sources": rows, "table_bytes": total_size}, indent=2, default=str))
        return
    print(
        f"{'source':<20} {'docs':>6} {'stored':>6} {'files':>6} {'raw MB':>8} {'zlib MB':>8} {'ratio':>6}"
        f" {'median kB':>9} {'max kB':>8}  media types"
    )
    for r in rows:
        ratio = r["raw_bytes"] / r["stored_bytes"] if r["stored_bytes"] else 0.0
        print(
            f"{r['source']:<20} {r['documents']:>6} {r['stored']:>6} {r['whole_files']:>6}"
            f" {r['raw_bytes'] / 1e6:>8.2f} {r['stored_bytes'] / 1e6:>8.2f} {ratio:>6.1f}"
            f" {(r['median_bytes'] or 0) / 1e3:>9.1f} {(r['max_bytes'] or 0) / 1e3:>8.1f}  {r['media_types'] or '-'}"
        )
    raw = sum(r["raw_bytes"] for r in rows)
    stored = sum(r["stored_bytes"] for r in rows)
    print(
        f"total: {raw / 1e6:.1f} MB of upstream forms stored in {stored / 1e6:.1f} MB; table {total_size / 1e6:.1f} MB"
    )


if __name__ == "__main__":
    main()
