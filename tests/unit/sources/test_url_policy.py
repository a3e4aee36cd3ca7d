"""The URL policy: schemes, hosts, IP literals, loopback and file:// (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.sources.upstream import UpstreamConfig
from pipeline.sources.url_policy import check_url, file_path
from secrag.errors import FetchError

STRICT = UpstreamConfig()
LOCAL = UpstreamConfig(allow_loopback=True, allow_file=True)


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/SigmaHQ/sigma.git",
        "https://api.github.com/repos/elastic/detection-rules/releases/latest",
        "https://www.cisa.gov/sites/default/files/feeds/known_exploited_vulnerabilities.json",
        "https://GitHub.com./x/y.git",  # case and a trailing dot do not matter
        "https://objects.githubusercontent.com:443/x",
    ],
)
def test_allowed_upstreams(url: str) -> None:
    assert check_url(url, STRICT).scheme == "https"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://github.com/x", "plain http"),
        ("ftp://github.com/x", "scheme 'ftp'"),
        ("ssh://git@github.com/x", "scheme 'ssh'"),
        ("git@github.com:x/y.git", "scheme"),
        ("https://evil.example.com/x", "not on the allowlist"),
        ("https://github.com.evil.example/x", "not on the allowlist"),
        ("https://93.184.216.34/x", "IP-literal"),
        ("https://[2606:2800:220:1::]/x", "IP-literal"),
        ("https://2130706433/x", "IP-literal"),
        ("https://0x7f.1/x", "IP-literal"),
        ("https://127.0.0.1/x", "IP-literal"),
        ("http://127.0.0.1:8080/x", "IP-literal"),
        ("http://localhost:8080/x", "plain http"),
        ("https://user:secret@github.com/x", "credentials"),
        ("https:///x", "no host"),
        ("https://github.com:99999/x", "malformed"),
        ("file:///etc/passwd", "file:// URLs are not allowed"),
    ],
)
def test_refused_by_default(url: str, reason: str) -> None:
    with pytest.raises(FetchError, match=reason) as info:
        check_url(url, STRICT)
    assert "secret" not in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/feed.json",
        "https://127.0.0.1/x",
        "http://[::1]:9/x",
        "http://localhost:8080/x",
        "file:///tmp/mirror/git/sigma.git",
        "file://localhost/tmp/x.json",
    ],
)
def test_loopback_and_file_when_allowed(url: str) -> None:
    check_url(url, LOCAL)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.2/x", "IP-literal"),
        ("http://10.0.0.1/x", "IP-literal"),
        ("http://169.254.169.254/latest/meta-data", "IP-literal"),
        ("http://github.com/x", "plain http"),
        ("file://server/share/x", "must not name a host"),
    ],
)
def test_loopback_allowance_is_narrow(url: str, reason: str) -> None:
    with pytest.raises(FetchError, match=reason):
        check_url(url, LOCAL)


def test_extra_hosts_extend_the_allowlist() -> None:
    cfg = UpstreamConfig(allowed_hosts=STRICT.allowed_hosts | {"Mirror.Example.org"})
    check_url("https://mirror.example.org/kev.json", cfg)


def test_file_path_decodes_the_url(tmp_path: Path) -> None:
    target = tmp_path / "a b" / "kev.json"
    assert file_path(target.as_uri()) == target


def test_token_goes_only_to_the_api() -> None:
    cfg = UpstreamConfig(github_token="t")
    assert cfg.is_api_url("https://api.github.com/repos/a/b/releases/latest")
    assert not cfg.is_api_url("https://github.com/a/b.git")
    assert not cfg.is_api_url("https://objects.githubusercontent.com/x")
    assert not cfg.is_api_url("http://api.github.com/repos/a/b")
    ghe = UpstreamConfig(github_api_base="https://ghe.example.com/api/v3/")
    assert ghe.is_api_url("https://ghe.example.com/api/v3/repos/a/b/releases/latest")
    assert not ghe.is_api_url("https://ghe.example.com/other")
