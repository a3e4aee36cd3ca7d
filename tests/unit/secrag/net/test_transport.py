"""The vetted transport raises httpx's errors, as httpx's own transport does (the download client catches those)."""

from __future__ import annotations

import httpcore
import httpx
import pytest

from secrag.errors import FetchError
from secrag.net.transport import _httpx_errors


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (httpcore.ConnectTimeout, httpx.ConnectTimeout),
        (httpcore.ReadTimeout, httpx.ReadTimeout),
        (httpcore.WriteTimeout, httpx.WriteTimeout),
        (httpcore.PoolTimeout, httpx.PoolTimeout),
        (httpcore.ConnectError, httpx.ConnectError),
        (httpcore.ReadError, httpx.ReadError),
        (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
        (httpcore.LocalProtocolError, httpx.LocalProtocolError),
        (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    ],
)
def test_httpcore_errors_become_the_httpx_error_of_the_same_name(raised: type[Exception], expected: type) -> None:
    with pytest.raises(expected, match="boom") as caught, _httpx_errors():
        raise raised("boom")
    assert type(caught.value) is expected and isinstance(caught.value.__cause__, raised)


def test_other_errors_pass_unchanged() -> None:
    with pytest.raises(FetchError), _httpx_errors():  # the URL policy's refusal
        raise FetchError("refused")
