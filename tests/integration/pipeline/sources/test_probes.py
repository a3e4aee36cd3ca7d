"""Version probes against local mirrors and the loopback server: commit, release, feed."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping

import pytest

from pipeline.sources.mirror import Mirror
from pipeline.sources.probes import feed_version, probe
from pipeline.sources.registry import SourceSpec
from pipeline.sources.upstream import UpstreamConfig
from secrag.errors import FetchError
from tests.plugins.mirror_changes import add_commit
from tests.plugins.upstream import LoopbackServer

SOURCES = ["hijacklibs", "mitre_car", "cisa_kev", "stratus_red_team"]
ConfigFactory = Callable[..., UpstreamConfig]


@pytest.fixture
def mirror(mirror_factory: Callable[..., Mirror]) -> Mirror:
    return mirror_factory(SOURCES)


def test_commit_probe_returns_the_exact_head(
    mirror: Mirror, upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec]
) -> None:
    seen = probe(source_specs["hijacklibs"], upstream_config(mirror))
    assert re.fullmatch(r"[0-9a-f]{40}", seen.version)
    assert seen.version == seen.commit == mirror.head("hijacklibs")
    assert (seen.source, seen.tracking, seen.url) == ("hijacklibs", "commit", mirror.repos["hijacklibs"])
    assert seen.checked_at.tzinfo is not None


def test_a_new_commit_changes_the_version(
    mirror_factory: Callable[..., Mirror], upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec]
) -> None:
    fresh = mirror_factory(["mitre_car"], fresh=True)
    cfg = upstream_config(fresh)
    before = probe(source_specs["mitre_car"], cfg)
    sha = add_commit(fresh, "mitre_car", {"analytics/CAR-2013-01-002.yaml": None})
    after = probe(source_specs["mitre_car"], cfg)
    assert after.version == sha != before.version


@pytest.mark.parametrize("via_http", [False, True], ids=["file-api", "loopback-api"])
def test_release_probe_reads_the_latest_tag_and_its_commit(
    mirror: Mirror, upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec], via_http: bool
) -> None:
    spec = source_specs["stratus_red_team"]
    assert spec.tracking == "release"
    seen = probe(spec, upstream_config(mirror, via_http=via_http))
    head = mirror.head("stratus_red_team")
    assert seen.version == f"mirror-{head[:12]}"
    assert seen.commit == head  # the annotated tag is peeled to its commit


def test_release_probe_follows_a_new_release(
    mirror_factory: Callable[..., Mirror], upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec]
) -> None:
    fresh = mirror_factory(["stratus_red_team"], fresh=True)
    cfg = upstream_config(fresh, via_http=True)
    before = probe(source_specs["stratus_red_team"], cfg)
    sha = add_commit(fresh, "stratus_red_team", {"docs/attack-techniques/new.md": b"# new\n"})
    after = probe(source_specs["stratus_red_team"], cfg)
    assert (after.version, after.commit) == (f"mirror-{sha[:12]}", sha)
    assert after.version != before.version


def test_release_whose_tag_is_missing_fails(
    mirror: Mirror, upstream_config: ConfigFactory, http_server: LoopbackServer, source_specs: Mapping[str, SourceSpec]
) -> None:
    spec = source_specs["stratus_red_team"]
    http_server.json(f"/api/repos/{spec.github}/releases/latest", {"tag_name": "v9.9.9"})
    cfg = upstream_config(mirror, github_api_base=http_server.url("/api"))
    with pytest.raises(FetchError, match="no tag 'v9.9.9'"):
        probe(spec, cfg)


@pytest.mark.parametrize("body", [{"name": "x"}, [], {"tag_name": "--upload-pack=evil"}])
def test_release_without_a_usable_tag_fails(
    mirror: Mirror,
    upstream_config: ConfigFactory,
    http_server: LoopbackServer,
    body: object,
    source_specs: Mapping[str, SourceSpec],
) -> None:
    spec = source_specs["stratus_red_team"]
    http_server.json(f"/api/repos/{spec.github}/releases/latest", body)
    cfg = upstream_config(mirror, github_api_base=http_server.url("/api"))
    with pytest.raises(FetchError, match="tag"):
        probe(spec, cfg)


@pytest.mark.parametrize("via_http", [False, True], ids=["file-feed", "loopback-feed"])
def test_feed_probe_reads_catalog_version(
    mirror: Mirror, upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec], via_http: bool
) -> None:
    seen = probe(source_specs["cisa_kev"], upstream_config(mirror, via_http=via_http))
    expected = json.loads(mirror.feed_path("cisa_kev").read_bytes())["catalogVersion"]
    assert (seen.version, seen.commit, seen.tracking) == (expected, None, "feed")


def test_feed_probe_retries_a_server_error(
    mirror: Mirror, upstream_config: ConfigFactory, http_server: LoopbackServer, source_specs: Mapping[str, SourceSpec]
) -> None:
    from tests.plugins.upstream import Reply

    url = http_server.route("/kev.json", Reply(500), Reply(200, b'{"catalogVersion": "2026.09.01"}'))
    cfg = upstream_config(mirror, feed_overrides={"cisa_kev": url})
    assert probe(source_specs["cisa_kev"], cfg).version == "2026.09.01"


def test_feed_without_version_field_uses_a_content_hash(
    mirror: Mirror, upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec]
) -> None:
    spec = dataclasses.replace(source_specs["cisa_kev"], version_field="")
    seen = probe(spec, upstream_config(mirror))
    assert seen.version == feed_version(mirror.feed_path("cisa_kev").read_bytes(), "")
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", seen.version)


def test_feed_version_field_rules() -> None:
    assert feed_version(b'{"meta": {"v": 3}}', "meta.v") == "3"
    for data, match in [
        (b'{"v": null}', "no usable version"),
        (b'{"x": 1}', "no 'v' field"),
        (b"<html>", "not valid JSON"),
    ]:
        with pytest.raises(FetchError, match=match):
            feed_version(data, "v")


def test_missing_branch_is_reported(
    mirror: Mirror, upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec]
) -> None:
    spec = dataclasses.replace(source_specs["hijacklibs"], branch="no-such-branch")
    with pytest.raises(FetchError, match="no branch 'no-such-branch'"):
        probe(spec, upstream_config(mirror))


def test_probe_of_a_hanging_repo_is_bounded(
    mirror: Mirror, upstream_config: ConfigFactory, http_server: LoopbackServer, source_specs: Mapping[str, SourceSpec]
) -> None:
    url = http_server.hang("/hijacklibs.git/info/refs", seconds=60)
    cfg = upstream_config(mirror, repo_overrides={"hijacklibs": url.removesuffix("/info/refs")})
    with pytest.raises(FetchError, match="timed out"):
        probe(source_specs["hijacklibs"], cfg, timeout=1.0)
    assert http_server.hits("/hijacklibs.git/info/refs")  # git really was waiting on the server
    # ... and was stopped while the server still held the request
    assert http_server.statuses("/hijacklibs.git/info/refs") == []


def test_probe_of_an_unknown_repo_fails_clearly(
    mirror: Mirror, upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec], tmp_path
) -> None:
    cfg = upstream_config(mirror, repo_overrides={"hijacklibs": (tmp_path / "absent.git").as_uri()})
    with pytest.raises(FetchError, match="git ls-remote .*absent.git"):
        probe(source_specs["hijacklibs"], cfg)


def test_repo_url_must_pass_the_policy(mirror: Mirror, source_specs: Mapping[str, SourceSpec]) -> None:
    strict = UpstreamConfig(repo_overrides=mirror.repos)  # file:// not allowed
    with pytest.raises(FetchError, match="file:// URLs are not allowed"):
        probe(source_specs["hijacklibs"], strict)


def test_release_probe_asks_conditionally_and_a_304_keeps_the_version(
    mirror_factory: Callable[..., Mirror],
    upstream_config: ConfigFactory,
    http_server: LoopbackServer,
    source_specs: Mapping[str, SourceSpec],
    tmp_path,
) -> None:
    spec = source_specs["stratus_red_team"]
    fresh = mirror_factory(["stratus_red_team"], fresh=True)
    cfg = upstream_config(fresh, via_http=True, github_token="t0ken")
    api = f"/api/repos/{spec.github}/releases/latest"
    first = probe(spec, cfg)
    assert first.etag and first.validated == http_server.url(api) and not first.not_modified
    # A 304 confirms the tag without resolving it again: the repository is not even reachable now.
    gone = dataclasses.replace(cfg, repo_overrides={spec.name: (tmp_path / "gone.git").as_uri()})
    again = probe(spec, gone, known=first)
    assert again.not_modified and (again.version, again.commit, again.etag) == (first.version, first.commit, first.etag)
    assert again.checked_at > first.checked_at
    sent = http_server.hits(api)[-1].headers
    assert sent["If-None-Match"] == first.etag and sent["Authorization"] == "Bearer t0ken"
    sha = add_commit(fresh, "stratus_red_team", {"docs/attack-techniques/new.md": b"# new\n"})
    moved = probe(spec, cfg, known=again)
    assert not moved.not_modified and (moved.version, moved.commit) == (f"mirror-{sha[:12]}", sha)
    assert http_server.statuses(api) == [200, 304, 200]


def test_feed_probe_asks_conditionally_by_etag_or_last_modified(
    mirror: Mirror, upstream_config: ConfigFactory, http_server: LoopbackServer, source_specs: Mapping[str, SourceSpec]
) -> None:
    spec = source_specs["cisa_kev"]
    stamp = "Fri, 07 Aug 2026 12:00:00 GMT"
    url = http_server.conditional("/kev.json", b'{"catalogVersion": "2026.08.07"}', last_modified=stamp)
    cfg = upstream_config(mirror, feed_overrides={"cisa_kev": url})
    first = probe(spec, cfg)
    assert (first.version, first.last_modified, first.validated) == ("2026.08.07", stamp, url)
    by_etag = probe(spec, cfg, known=first)
    by_date = probe(spec, cfg, known=dataclasses.replace(first, etag=None))
    assert by_etag.not_modified and by_date.not_modified and by_date.version == "2026.08.07"
    assert http_server.hits("/kev.json")[-1].headers.get("If-Modified-Since") == stamp
    http_server.conditional(
        "/kev.json", b'{"catalogVersion": "2026.08.08"}', last_modified="Sat, 08 Aug 2026 12:00:00 GMT"
    )
    assert probe(spec, cfg, known=by_etag).version == "2026.08.08"
    assert http_server.statuses("/kev.json") == [200, 304, 304, 200]
    # Validators of another URL are never sent.
    elsewhere = probe(spec, upstream_config(mirror, via_http=True), known=by_etag)
    assert not elsewhere.not_modified


def test_probe_keeps_the_rate_limit_and_a_used_up_limit_is_not_retried(
    mirror: Mirror, upstream_config: ConfigFactory, http_server: LoopbackServer, source_specs: Mapping[str, SourceSpec]
) -> None:
    from secrag.errors import FetchRateLimited
    from tests.plugins.upstream import Reply

    spec = source_specs["stratus_red_team"]
    api = f"/api/repos/{spec.github}/releases/latest"
    tag = f"mirror-{mirror.head('stratus_red_team')[:12]}"
    limits = {"x-ratelimit-limit": "60", "x-ratelimit-remaining": "9", "x-ratelimit-reset": "1900000000"}
    http_server.route(api, Reply(200, json.dumps({"tag_name": tag}).encode(), limits))
    cfg = upstream_config(mirror, github_api_base=http_server.url("/api"))
    seen = probe(spec, cfg)
    assert seen.rate is not None and (seen.rate.limit, seen.rate.remaining, seen.rate.reset_at) == (60, 9, 1.9e9)
    assert seen.rate.wait(now=1.9e9 - 120) == 120  # only the reserve left: wait for the reset
    used_up = {**limits, "x-ratelimit-remaining": "0"}
    http_server.route(api, Reply(403, b'{"message": "API rate limit exceeded"}', used_up))
    with pytest.raises(FetchRateLimited) as refused:
        probe(spec, cfg)
    assert refused.value.reset_at == 1.9e9 and len(http_server.hits(api)) == 2
