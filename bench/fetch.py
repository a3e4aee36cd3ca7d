"""Per-fetch overhead of the vetted transport (address check, pinned connect, clamped reads).

    python bench/fetch.py [--requests 300] [--size 65536]

Serves one body from a loopback HTTP server and fetches it N times through secrag.net.downloads
(resolve + vet + pinned connect + deadline-clamped reads), then N times through a plain httpx
client (default: it loads the CA bundle per client, as the fetcher used to; and with a shared TLS
context, which isolates the cost of vetting), one fresh client per fetch as the pipeline does.
Prints the median and p95 of each and the ratios. The vetting policy here admits loopback (the bench server); the
checks it runs are the production ones.
"""

from __future__ import annotations

import argparse
import ipaddress
import statistics
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import SplitResult

import httpx

from secrag.net.download_limits import DownloadLimits
from secrag.net.downloads import get_bytes
from secrag.net.url_policy import UrlPolicy, parse_url


@dataclass(frozen=True)
class _BenchPolicy(UrlPolicy):
    def check(self, url: str) -> SplitResult:
        return parse_url(url)[0]

    def address_allowed(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return address.is_loopback or super().address_allowed(address)


def _server(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002, ANN401
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def _times(fetch: Any, n: int) -> list[float]:  # noqa: ANN401
    out = []
    for _ in range(n):
        started = time.perf_counter()
        fetch()
        out.append((time.perf_counter() - started) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--size", type=int, default=65536)
    args = ap.parse_args()
    httpd = _server(b"x" * args.size)
    url = f"http://localhost:{httpd.server_address[1]}/feed.json"
    policy, limits = _BenchPolicy(), DownloadLimits()

    def vetted() -> None:
        get_bytes(url, policy, limits, timeout=10)

    def plain() -> None:  # what the fetcher did before: a fresh default client per fetch
        with httpx.Client() as client:
            client.get(url).raise_for_status()

    tls = httpx.create_ssl_context()

    def plain_shared_tls() -> None:  # the same without the CA-bundle load: the cost of vetting alone
        with httpx.Client(verify=tls) as client:
            client.get(url).raise_for_status()

    for fetch in (vetted, plain, plain_shared_tls):  # warm up every path
        _times(fetch, 20)
    results = {
        "vetted": _times(vetted, args.requests),
        "plain httpx": _times(plain, args.requests),
        "plain, shared TLS": _times(plain_shared_tls, args.requests),
    }
    for name, ms in results.items():
        p95 = statistics.quantiles(ms, n=20)[-1]
        print(f"{name:<18} median {statistics.median(ms):7.2f} ms   p95 {p95:7.2f} ms   ({args.requests} fetches)")
    for base in ("plain httpx", "plain, shared TLS"):
        ratio = statistics.median(results["vetted"]) / statistics.median(results[base])
        print(f"median ratio vetted / {base}: {ratio:.2f}")
    httpd.shutdown()


if __name__ == "__main__":
    main()
