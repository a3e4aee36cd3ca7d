"""Where a search's time goes: query encoding, PostgreSQL, and secrag's own Python, per request.

Runs every dev query once (after a warm-up pass) through the API's own search code in process (the
Service the app builds, caches off), one request at a time, and times:

- `encode`: the encoder's model run;
- `postgres`: every statement a search sends, on every connection: the pool's check and reset round
  trips, the lookups before the legs, the legs (two statements at once when the voter legs run aside,
  serving/search/side_legs.py) and the page's display fields. It is the database's work per search (its
  CPU on a busy server), summed over both connections;
- `pg waited`: the part of it the request waited for (the voter legs' statement overlaps the others');
- `python`: the rest of the request's time (analysis, planning, fusion, rescoring, the response model).

HTTP (uvicorn, routing, validation, JSON) is what bench/peer_compare.py's latency adds on top. `--statements`
adds each statement's mean time per search, by name (sql/queries/serving.sql) or by the legs it runs.
`--clients N` measures CPU per search at N concurrent clients instead (bench/lib/cpu.py holds both): this
process's (every thread) and its PostgreSQL backends' (/proc/<pid>/schedstat: the server runs on this machine,
readable by this user), one warm-up pass then `--rounds` measured ones; `--shares` splits it by statement, server
and client, pool, encoder and Python (two /proc reads per statement, counted in `process`); `--planning` adds each
statement's planning time (EXPLAIN (SUMMARY)).
"""

from __future__ import annotations

import argparse

from lib.cpu import one_client, report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--no-filters", action="store_true")
    ap.add_argument("--statements", action="store_true", help="Also each statement's mean time per search.")
    ap.add_argument("--clients", type=int, default=0, help="CPU per search at this many clients at once instead.")
    ap.add_argument("--rounds", type=int, default=2, help="With --clients: measured passes after one warm-up.")
    ap.add_argument("--shares", action="store_true", help="With --clients: where the CPU goes.")
    ap.add_argument("--planning", action="store_true", help="With --clients: each statement's planning time too.")
    args = ap.parse_args()
    if args.clients:
        report(args)
    else:
        one_client(args)


if __name__ == "__main__":
    main()
