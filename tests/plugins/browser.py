"""Headless Chromium (Debian's `chromium` package, installed by `make test`) for tests of the pages the
project serves: a page is rendered with nothing reachable beyond loopback and its DOM returned."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import tempfile

import pytest

# Background services off (this machine's network is closed, and a test must not leave loopback); every
# non-loopback request goes to a proxy on a closed port and fails, so a page that needs a CDN renders empty.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--proxy-server=127.0.0.1:9",
]


def chromium() -> str:
    """The browser: $SECRAG_TEST_CHROMIUM or `chromium` on PATH; its absence fails the test (no skip)."""
    path = os.environ.get("SECRAG_TEST_CHROMIUM") or shutil.which("chromium")
    if not path:
        pytest.fail(
            "the browser tests need Chromium: `make test` installs Debian's chromium package "
            "(apt-get install chromium), or set SECRAG_TEST_CHROMIUM to a Chromium binary"
        )
    return path


def render(url: str, *, budget_ms: int = 20_000) -> str:
    """The DOM of `url` after its scripts ran for `budget_ms` of virtual time."""
    with tempfile.TemporaryDirectory(prefix="secrag-chromium-") as profile:
        result = subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert result.returncode == 0 and result.stdout, f"chromium failed on {url}: {result.stderr[-2000:]}"
    return result.stdout


def visible_text(dom: str) -> str:
    """The page's text without scripts, styles and tags, whitespace collapsed."""
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.S | re.I)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", text))).strip()
