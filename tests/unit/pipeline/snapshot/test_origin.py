"""Where a snapshot comes from: a path or a file:// URL is read where it is; only http(s) is downloaded, and
only when its signature will be checked or the operator accepts unsigned snapshots from URLs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.snapshot.origin import is_url, local_copy
from secrag.errors import FetchError, SnapshotRefused
from secrag.settings import Settings


@pytest.mark.parametrize(
    ("location", "url"),
    [
        ("store.tar", False),
        ("/srv/snapshots/store.tar.gz", False),
        ("file:///srv/store.tar", False),
        ("https://example.org/store.tar", True),
        ("HTTPS://example.org/store.tar", True),
        ("http://example.org/store.tar", True),
    ],
)
def test_only_http_locations_are_downloaded(location: str, url: bool) -> None:
    assert is_url(location) is url


def test_a_file_is_read_where_it_is(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    with local_copy(str(tmp_path / "store.tar"), settings) as path:
        assert path == tmp_path / "store.tar"
    with local_copy((tmp_path / "my store.tar").as_uri(), settings) as path:
        assert path == tmp_path / "my store.tar"


def test_plain_http_is_refused_by_the_url_policy(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path, snapshot_unsigned_urls=True)  # type: ignore[call-arg]
    with pytest.raises(FetchError, match="plain http is not allowed"), local_copy("http://example.org/s.tar", settings):
        pass


@pytest.mark.parametrize("location", ["https://example.org/store.tar", "http://127.0.0.1:9/store.tar"])
def test_a_url_without_a_key_is_refused_unless_unsigned_ones_are_accepted(location: str, tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    with pytest.raises(SnapshotRefused, match="named by URL and SECRAG_SNAPSHOT_PUBLIC_KEY is unset"):
        with local_copy(location, settings):
            pass
    assert not any(tmp_path.iterdir())  # nothing was downloaded
    with local_copy(str(tmp_path / "store.tar"), settings) as path:  # a file needs no signature
        assert path == tmp_path / "store.tar"
