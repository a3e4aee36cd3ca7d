"""The URL policy: schemes, hosts, IP literals and file:// (no network); loopback only in test fixtures."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from pipeline.sources.upstream import UpstreamConfig
from secrag.errors import FetchError
from secrag.net.url_policy import UrlPolicy, file_path
from secrag.settings import Settings
from tests.plugins.upstream import LoopbackPolicy

STRICT = UrlPolicy()
LOCAL = LoopbackPolicy(allow_file=True)


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
    assert STRICT.check(url).scheme == "https"


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
        STRICT.check(url)
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
    LOCAL.check(url)


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
        LOCAL.check(url)


def test_extra_hosts_extend_the_allowlist() -> None:
    policy = UrlPolicy(allowed_hosts=STRICT.allowed_hosts | {"Mirror.Example.org"})
    policy.check("https://mirror.example.org/kev.json")


def test_policy_from_settings_trusts_configured_https_bases_only() -> None:
    settings = Settings(http_allowed_hosts=["extra.example"], github_api_base="https://ghe.example.com/api/v3")
    policy = UrlPolicy.from_settings(settings, extra_bases=["https://raw.example.net", "http://plain.example"])
    assert {"extra.example", "ghe.example.com", "raw.example.net", "github.com"} <= policy.allowed_hosts
    assert "plain.example" not in policy.allowed_hosts and not policy.allow_file


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080/feed.json", "https://localhost/x", "http://[::1]:9/x", "https://127.0.0.1/x"]
)
def test_production_policy_never_allows_loopback(url: str) -> None:
    with pytest.raises(FetchError):
        UrlPolicy(allow_file=True).check(url)


def test_git_may_use_file_only_for_local_mirrors() -> None:
    assert UrlPolicy().git_protocols() == ("https",)
    assert UrlPolicy(allow_file=True).git_protocols() == ("https", "file")


def test_file_path_decodes_the_url(tmp_path: Path) -> None:
    target = tmp_path / "a b" / "kev.json"
    assert file_path(target.as_uri()) == target


def test_token_goes_only_to_the_api() -> None:
    cfg = UpstreamConfig(github_token="t")
    assert cfg.api_headers(urlsplit("https://api.github.com/repos/a/b/releases/latest"))["Authorization"] == "Bearer t"
    assert cfg.api_headers(urlsplit("https://github.com/a/b.git")) == {}
    assert cfg.api_headers(urlsplit("https://objects.githubusercontent.com/x")) == {}
    assert cfg.api_headers(urlsplit("http://api.github.com/repos/a/b")) == {}
    ghe = UpstreamConfig(github_api_base="https://ghe.example.com/api/v3/")
    assert ghe.is_api_url(urlsplit("https://ghe.example.com/api/v3/repos/a/b/releases/latest"))
    assert not ghe.is_api_url(urlsplit("https://ghe.example.com/other"))
