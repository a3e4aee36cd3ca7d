"""One repository's poke, read by every source on it: each source's tick sees it until that source's own probe
answered it (sources.poked_upto), so ATT&CK's sources on attack-stix-data all look after one webhook."""

from __future__ import annotations

import psycopg

from pipeline.pokes import mark_seen, read_tick
from pipeline.sources.registry import default_registry
from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir

ATTACK = "mitre-attack/attack-stix-data"


def test_a_repository_s_poke_is_read_by_each_of_its_sources_until_each_answers(db: psycopg.Connection) -> None:
    queries, registry = Queries(sql_dir(), "pokes"), default_registry()
    enterprise, ics, sigma = registry["mitre_attack"], registry["mitre_attack_ics"], registry["sigma"]
    for spec in (enterprise, ics, sigma):
        db.execute("INSERT INTO sources (name, kind) VALUES (%s, 'online')", (spec.name,))
    poke = db.execute(
        "INSERT INTO pokes (hook, delivery_id, event) VALUES (%s, 'd-1', 'push') RETURNING id", (ATTACK,)
    ).fetchone()[0]

    assert read_tick(db, queries, enterprise).poke == read_tick(db, queries, ics).poke == poke
    assert read_tick(db, queries, sigma).poke is None  # another repository's

    mark_seen(db, queries, enterprise.name, poke)
    assert read_tick(db, queries, enterprise).poke is None
    assert read_tick(db, queries, ics).poke == poke  # answered by mitre_attack's probe, not by this one's
    mark_seen(db, queries, ics.name, poke)
    assert read_tick(db, queries, ics).poke is None

    later = db.execute(
        "INSERT INTO pokes (hook, delivery_id, event) VALUES (%s, 'd-2', 'release') RETURNING id", (ATTACK,)
    ).fetchone()[0]
    mark_seen(db, queries, ics.name, poke)  # an older answer never hides a newer poke
    assert read_tick(db, queries, ics).poke == later
