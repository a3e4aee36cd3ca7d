"""The fetcher against a loopback server: retries, limits, redirects, timeouts, file://."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pipeline.sources.http_fetch import download, get_bytes, get_json
from pipeline.sources.upstream import UpstreamConfig
from secrag.errors import FetchError
from secrag.net.download_limits import DownloadLimits
from secrag.net.url_policy import UrlPolicy
from tests.plugins.upstream import LoopbackPolicy, LoopbackServer, Reply

CFG = UpstreamConfig(policy=LoopbackPolicy(), limits=DownloadLimits(retry_base=0.05, max_bytes=64 * 1024))


def test_json_document(http_server: LoopbackServer) -> None:
    url = http_server.json("/feed.json", {"catalogVersion": "2026.01.01"})
    assert get_json(url, CFG, timeout=5) == {"catalogVersion": "2026.01.01"}


def test_server_error_is_retried(http_server: LoopbackServer) -> None:
    url = http_server.route("/flaky", Reply(500), Reply(502), Reply(200, b"ok"))
    assert get_bytes(url, CFG, timeout=10) == b"ok"
    assert len(http_server.hits("/flaky")) == 3


def test_persistent_server_error_gives_up_after_bounded_attempts(http_server: LoopbackServer) -> None:
    url = http_server.route("/down", Reply(503))
    with pytest.raises(FetchError, match=r"HTTP 503 \(attempt 4 of 4\)"):
        get_bytes(url, CFG, timeout=10)
    assert len(http_server.hits("/down")) == 4


def test_not_found_is_not_retried(http_server: LoopbackServer) -> None:
    with pytest.raises(FetchError, match="HTTP 404"):
        get_bytes(http_server.url("/missing"), CFG, timeout=10)
    assert len(http_server.hits("/missing")) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 410])
def test_client_errors_are_not_retried(http_server: LoopbackServer, status: int) -> None:
    url = http_server.route("/x", Reply(status))
    with pytest.raises(FetchError, match=f"HTTP {status}"):
        get_bytes(url, CFG, timeout=10)
    assert len(http_server.hits("/x")) == 1


def test_retry_after_is_honoured(http_server: LoopbackServer) -> None:
    url = http_server.route("/limited", Reply(429, headers={"Retry-After": "1"}), Reply(200, b"ok"))
    assert get_bytes(url, CFG, timeout=10) == b"ok"
    first, second = http_server.hits("/limited")
    assert second.at - first.at >= 0.9  # waited as told, not the 0.05 s backoff


def test_retry_after_past_the_budget_fails_at_once(http_server: LoopbackServer) -> None:
    url = http_server.route("/limited", Reply(429, headers={"Retry-After": "3600"}))
    with pytest.raises(FetchError, match="HTTP 429.*no time left"):
        get_bytes(url, CFG, timeout=5)
    assert len(http_server.hits("/limited")) == 1


def test_hang_fails_within_the_timeout(http_server: LoopbackServer) -> None:
    url = http_server.hang("/hang", seconds=60)
    with pytest.raises(FetchError, match="timed out"):
        get_bytes(url, CFG, timeout=1.0)
    # The client's deadline came first: the server still held the request.
    assert http_server.hits("/hang") and http_server.statuses("/hang") == []


def test_connection_refused_is_retried_then_fails() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the request: nothing listens
    with pytest.raises(FetchError, match="ConnectError"):
        get_bytes(f"http://127.0.0.1:{port}/x", CFG, timeout=5)


def test_redirect_on_the_same_host_is_followed(http_server: LoopbackServer) -> None:
    http_server.redirect("/old", "/new", status=301)
    http_server.bytes("/new", b"moved")
    assert get_bytes(http_server.url("/old"), CFG, timeout=5) == b"moved"


@pytest.mark.parametrize(
    "location",
    [
        "https://evil.example.com/feed.json",
        "http://169.254.169.254/latest/meta-data/",
        "https://10.0.0.1/x",
        "file:///etc/passwd",
    ],
)
def test_redirect_to_a_disallowed_target_is_refused(http_server: LoopbackServer, location: str) -> None:
    url = http_server.redirect("/r", location)
    with pytest.raises(FetchError, match="refused"):
        get_bytes(url, CFG, timeout=5)


def test_redirect_loop_is_bounded(http_server: LoopbackServer) -> None:
    http_server.redirect("/a", "/b")
    http_server.redirect("/b", "/a")
    with pytest.raises(FetchError, match="more than 5 redirects"):
        get_bytes(http_server.url("/a"), CFG, timeout=5)
    assert len(http_server.requests) == 6


def test_oversized_with_content_length_is_refused_up_front(http_server: LoopbackServer, tmp_path: Path) -> None:
    url = http_server.oversized("/big", size=1024 * 1024)
    dest = tmp_path / "big.json"
    with pytest.raises(FetchError, match="1048576 bytes exceeds the 65536-byte limit"):
        download(url, dest, CFG, timeout=10)
    assert list(tmp_path.iterdir()) == []


def test_oversized_stream_is_cut_and_the_partial_file_deleted(http_server: LoopbackServer, tmp_path: Path) -> None:
    url = http_server.oversized("/big", size=1024 * 1024, content_length=False)
    dest = tmp_path / "sub" / "big.json"
    with pytest.raises(FetchError, match="exceeds the 65536-byte limit"):
        download(url, dest, CFG, timeout=10)
    assert list((tmp_path / "sub").iterdir()) == []
    assert len(http_server.hits("/big")) == 1  # a size violation is not transient


def test_download_writes_the_body(http_server: LoopbackServer, tmp_path: Path) -> None:
    url = http_server.route("/f", Reply(500), Reply(200, b"x" * 1000))
    dest = download(url, tmp_path / "f.bin", CFG, timeout=10)
    assert dest.read_bytes() == b"x" * 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


def test_ip_literal_is_refused_before_any_request(http_server: LoopbackServer) -> None:
    strict = UpstreamConfig()
    with pytest.raises(FetchError, match="IP-literal"):
        get_bytes(http_server.url("/x"), strict, timeout=5)
    assert http_server.requests == []


def test_file_url_only_when_allowed(tmp_path: Path) -> None:
    feed = tmp_path / "kev.json"
    feed.write_text('{"catalogVersion": "1"}')
    with pytest.raises(FetchError, match="file:// URLs are not allowed"):
        get_json(feed.as_uri(), CFG)
    allowed = UpstreamConfig(policy=UrlPolicy(allow_file=True), limits=DownloadLimits(max_bytes=1024))
    assert get_json(feed.as_uri(), allowed) == {"catalogVersion": "1"}
    feed.write_bytes(b"0" * 2048)
    with pytest.raises(FetchError, match="exceeds the 1024-byte limit"):
        get_json(feed.as_uri(), allowed)
    with pytest.raises(FetchError, match="no such file"):
        get_json((tmp_path / "absent.json").as_uri(), allowed)


def test_invalid_json_is_a_fetch_error(http_server: LoopbackServer) -> None:
    url = http_server.bytes("/bad.json", b"{nope")
    with pytest.raises(FetchError, match="not valid JSON"):
        get_json(url, CFG, timeout=5)


def test_token_only_sent_to_the_api_base(http_server: LoopbackServer) -> None:
    cfg = UpstreamConfig(policy=LoopbackPolicy(), github_token="s3cret", github_api_base=http_server.url("/api"))
    http_server.json("/api/repos/a/b/releases/latest", {"tag_name": "v1"})
    http_server.redirect("/api/repos/a/b/moved", "/elsewhere")
    http_server.bytes("/elsewhere", b"{}")
    http_server.bytes("/feed.json", b"{}")
    get_json(http_server.url("/api/repos/a/b/releases/latest"), cfg, timeout=5)
    get_json(http_server.url("/api/repos/a/b/moved"), cfg, timeout=5)
    get_json(http_server.url("/feed.json"), cfg, timeout=5)
    auth = {r.path: r.headers.get("Authorization") for r in http_server.requests}
    assert auth == {
        "/api/repos/a/b/releases/latest": "Bearer s3cret",
        "/api/repos/a/b/moved": "Bearer s3cret",
        "/elsewhere": None,
        "/feed.json": None,
    }
