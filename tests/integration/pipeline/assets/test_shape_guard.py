"""An upstream whose layout moved is refused, not served: real loopback upstreams changed by a commit, published
through real Dagster materializations. Sigma's `rules` tree renamed (its kind vanishes, and most records with
it), ATT&CK's techniques without their ATT&CK reference and Atomic's executors without their name (kinds
vanish while the record count stays in its band): each refused with the kind named, the no_suspicious_shrink
check failing, the old version served and /v1/sources showing the refusal; a refresh within the bands
publishes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from fastapi.testclient import TestClient

from pipeline.assets.keys import NO_SHRINK, NON_EMPTY
from pipeline.sources.git_fetch import run_git
from pipeline.sources.mirror import Mirror, mirror_env
from pipeline.sources.registry import SourceSpec
from serving.api.app import create_app
from serving.settings import ServingSettings
from tests.plugins.graph import harness
from tests.plugins.mirror_changes import add_commit

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::DeprecationWarning:dagster")
BUNDLE = "enterprise-attack/enterprise-attack.json"
NODE = "sources__mitre_attack"


@pytest.fixture
def api(db_url: str) -> Iterator[TestClient]:
    settings = ServingSettings(_env_file=None, database_url=db_url, warm_up=False, result_cache_size=0)  # type: ignore[call-arg]
    with TestClient(create_app(settings)) as client:
        yield client


def _kinds(conn: Any, source: str, key: str) -> dict[str, int]:  # noqa: ANN401 - a connection
    rows = conn.execute(
        "SELECT metadata ->> %s, count(*) FROM documents WHERE source = %s GROUP BY 1", [key, source]
    ).fetchall()
    return {str(k): int(n) for k, n in rows}


def _checks(result: dg.ExecuteInProcessResult) -> dict[str, tuple[bool, str, dict[str, Any]]]:
    return {
        e.check_name: (e.passed, e.severity.value, {k: v.value for k, v in e.metadata.items()})
        for e in result.get_asset_check_evaluations()
    }


def _listed(api: TestClient, source: str) -> dict[str, Any]:
    return {s["name"]: s for s in api.get("/v1/sources").json()["sources"]}[source]


def _blob(mirror: Mirror, source: str, rel: str) -> bytes:
    env = mirror_env(GIT_DIR=str(mirror.git_dir(source)))
    return run_git(["show", f"{mirror.head(source)}:{rel}"], timeout=60, env=env).encode()


def _refused(result: dg.ExecuteInProcessResult, api: TestClient, source: str) -> tuple[str, dict[str, Any]]:
    """The failed no_suspicious_shrink check's reason, after asserting the refusal everywhere it shows."""
    assert not result.success
    checks = _checks(result)
    passed, severity, facts = checks[NO_SHRINK]
    assert (passed, severity) == (False, "ERROR") and checks[NON_EMPTY][0]
    listed = _listed(api, source)
    assert (listed["state"], listed["error_kind"]) == ("refused", "shrank")
    return str(facts["reason"]), listed


def test_a_renamed_sigma_rules_tree_is_refused_naming_it(
    db_url: str,
    tmp_path: Path,
    mirror_factory: Callable[..., Mirror],
    source_specs: Mapping[str, SourceSpec],
    api: TestClient,
) -> None:
    mirror = mirror_factory(["sigma"], fresh=True)
    h = harness(db_url, mirror, tmp_path / "work", {"sigma": source_specs["sigma"]})
    h.materialize("key:sources/sigma")
    with h.connect() as conn:
        old, records = conn.execute("SELECT current_version, record_count FROM sources WHERE name = 'sigma'").fetchone()
        rules = conn.execute(
            "SELECT count(*) FROM documents WHERE source = 'sigma' AND upstream_path LIKE 'rules/%%'"
        ).fetchone()[0]
    assert rules > records / 2  # the main tree: most of Sigma

    add_commit(mirror, "sigma", {}, "rules/ moves to detection-rules/", moves={"rules": "detection-rules"})
    result = h.materialize("key:sources/sigma", raise_on_error=False)
    reason, listed = _refused(result, api, "sigma")
    assert f"kind 'rules' (folder) shrank from {rules} to 0 records" in reason
    assert f"shrank from {records} to {records - rules} records" in reason
    assert listed["version"] == old
    with h.connect() as conn:
        served = conn.execute("SELECT current_version, record_count FROM sources WHERE name = 'sigma'").fetchone()
    assert served == (old, records)


def test_atomic_executors_without_their_name_are_refused(
    db_url: str,
    tmp_path: Path,
    mirror_factory: Callable[..., Mirror],
    source_specs: Mapping[str, SourceSpec],
    api: TestClient,
) -> None:
    """A dropped field: the executors say `type:` where they said `name:` (a few, indented otherwise, keep it);
    every test still parses, so the record count is what it was, but each executor's tests (the source's
    kinds) are all but gone."""
    mirror = mirror_factory(["atomic"], fresh=True)
    h = harness(db_url, mirror, tmp_path / "work", {"atomic": source_specs["atomic"]})
    h.materialize("key:sources/atomic")
    with h.connect() as conn:
        old, records = conn.execute(
            "SELECT current_version, record_count FROM sources WHERE name = 'atomic'"
        ).fetchone()
        kinds = _kinds(conn, "atomic", "executor")
    assert {"powershell", "command_prompt", "sh", "bash"} <= set(kinds)

    env = mirror_env(GIT_DIR=str(mirror.git_dir("atomic")))
    files = run_git(["ls-tree", "-r", "--name-only", mirror.head("atomic"), "atomics/"], timeout=60, env=env).split()
    renamed = re.compile(r"(?m)^(    )name:(\s*\S+\s*)$")  # the executor's own key, indented under it
    changes = {rel: renamed.sub(r"\1type:\2", _blob(mirror, "atomic", rel).decode()).encode() for rel in files}
    add_commit(mirror, "atomic", changes, "executor name: becomes type:")
    result = h.materialize("key:sources/atomic", raise_on_error=False)
    reason, listed = _refused(result, api, "atomic")
    assert "shrank from" in reason and f"from {records} to" not in reason  # the count kept, kinds lost
    for kind, count in kinds.items():
        if count >= 10:
            assert f"kind {kind!r} (metadata:executor) shrank from {count} to " in reason
    assert listed["version"] == old
    with h.connect() as conn:
        assert _kinds(conn, "atomic", "executor") == kinds


def test_techniques_without_their_reference_are_refused_within_the_count_band(
    db_url: str, tmp_path: Path, mirror: Mirror, small_specs: Mapping[str, SourceSpec], api: TestClient
) -> None:
    """A dropped field: techniques (not sub-techniques) lose their ATT&CK reference, so that kind parses to
    nothing while the source keeps more than half its records (the record count's band alone would publish it)."""
    h = harness(db_url, mirror, tmp_path / "work", small_specs)
    h.materialize("key:sources/mitre_attack")
    with h.connect() as conn:
        old = conn.execute("SELECT current_version FROM sources WHERE name = 'mitre_attack'").fetchone()[0]
        kinds = _kinds(conn, "mitre_attack", "kind")
    total, techniques = sum(kinds.values()), kinds["technique"]
    assert techniques >= 10 and total - techniques >= total / 2  # within SECRAG_MAX_SHRINK's default band

    bundle = json.loads(_blob(mirror, "mitre_attack", BUNDLE))
    for obj in bundle["objects"]:
        if obj.get("type") == "attack-pattern" and not obj.get("x_mitre_is_subtechnique"):
            obj["external_references"] = [r for r in obj["external_references"] if r["source_name"] != "mitre-attack"]
    add_commit(mirror, "mitre_attack", {BUNDLE: json.dumps(bundle).encode()}, "techniques lose their ATT&CK id")
    result = h.materialize("key:sources/mitre_attack", raise_on_error=False)
    reason, listed = _refused(result, api, "mitre_attack")
    assert reason == (
        f"kind 'technique' (metadata:kind) shrank from {techniques} to 0 records (band 50%); "
        "publish with force to accept"
    )  # the other kinds, and the record count, kept their shape
    assert listed["version"] == old
    with h.connect() as conn:
        assert _kinds(conn, "mitre_attack", "kind") == kinds

    forced = h.materialize("key:sources/mitre_attack", run_config={"ops": {NODE: {"config": {"force": True}}}})
    assert forced.success  # an operator who knows the change is real publishes it; the check says so
    passed, severity, facts = _checks(forced)[NO_SHRINK]
    assert (passed, severity) == (False, "WARN") and str(facts["forced_past"]).startswith("kind 'technique'")
    with h.connect() as conn:
        assert "technique" not in _kinds(conn, "mitre_attack", "kind")
    assert _listed(api, "mitre_attack")["state"] == "ok"


def test_a_refresh_within_the_bands_publishes(
    db_url: str, tmp_path: Path, mirror: Mirror, small_specs: Mapping[str, SourceSpec]
) -> None:
    h = harness(db_url, mirror, tmp_path / "work", small_specs)
    h.materialize("key:sources/mitre_attack")
    with h.connect() as conn:
        old = conn.execute("SELECT current_version FROM sources WHERE name = 'mitre_attack'").fetchone()[0]
    bundle = json.loads(_blob(mirror, "mitre_attack", BUNDLE))
    subs = [o for o in bundle["objects"] if o.get("type") == "attack-pattern" and o.get("x_mitre_is_subtechnique")]
    gone = {o["id"] for o in subs[: len(subs) // 3]}  # a third of a kind: inside its band
    bundle["objects"] = [o for o in bundle["objects"] if o["id"] not in gone]
    add_commit(mirror, "mitre_attack", {BUNDLE: json.dumps(bundle).encode()}, "some sub-techniques retire")
    result = h.materialize("key:sources/mitre_attack")
    checks = _checks(result)
    assert checks[NON_EMPTY][0] and checks[NO_SHRINK][0]
    with h.connect() as conn:
        assert conn.execute("SELECT current_version FROM sources WHERE name = 'mitre_attack'").fetchone()[0] != old
        removed = conn.execute(
            "SELECT count(*) FROM document_changes WHERE source = 'mitre_attack' AND change = 'removed'"
        ).fetchone()[0]
    assert removed == len(gone)
