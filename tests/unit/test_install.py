"""The Makefile, the image build and the docs install the same torch: one pin, one CPU index; the
Makefile's install script falls back to pip's own index and never takes CUDA libraries to a machine
without a GPU (deploy/install-torch.sh, run against a stub python: no network, nothing installed)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from secrag.settings import REPO_ROOT

SCRIPT = REPO_ROOT / "deploy" / "install-torch.sh"


def _makefile_default(name: str) -> str:
    match = re.search(rf"^{name}\s*\?=\s*(\S+)\s*$", (REPO_ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert match, f"the Makefile sets no default for {name}"
    return match.group(1)


PIN = _makefile_default("TORCH_VERSION")
INDEX = _makefile_default("TORCH_INDEX_URL")


def _read(path: str) -> str:
    return (REPO_ROOT / path).read_text(encoding="utf-8")


def test_the_default_is_pytorchs_cpu_index() -> None:
    assert INDEX == "https://download.pytorch.org/whl/cpu"
    assert re.fullmatch(r"\d+\.\d+\.\d+", PIN)


def test_the_image_build_installs_the_same_torch() -> None:
    dockerfile = _read("deploy/Dockerfile")
    assert re.findall(r"^ARG TORCH_INDEX_URL=(\S+)$", dockerfile, re.M) == [INDEX]
    assert set(re.findall(r"torch==([\w.+]+)", dockerfile)) == {PIN}
    assert set(re.findall(r"torch-([\d.]+)\*\.whl", dockerfile)) == {PIN}
    for script in ("deploy/build-image.sh", "deploy/check-image.sh"):
        text = _read(script)
        assert INDEX in text, f"{script} does not name {INDEX}"
        assert set(re.findall(r"torch-([\d.]+)\*\.whl", text)) <= {PIN}
    install = _read("deploy/install-torch.sh")
    assert f"TORCH_VERSION:-{PIN}}}" in install
    assert f"TORCH_INDEX_URL-{INDEX}}}" in install


def test_the_docs_name_the_same_pin_and_index() -> None:
    pages = {"README.md": _read("README.md")} | {
        p.relative_to(REPO_ROOT).as_posix(): p.read_text(encoding="utf-8") for p in (REPO_ROOT / "docs").glob("*.md")
    }
    for name, text in pages.items():
        assert set(re.findall(r"torch==([\w.+]+)", text)) <= {PIN}, name
        indexes = {u.rstrip("/.,)`") for u in re.findall(r"https://download\.pytorch\.org/whl/[\w/]*", text)}
        assert indexes <= {INDEX}, name
    assert f"torch=={PIN}" in pages["README.md"]
    assert INDEX in pages["README.md"]


# --- the install script, against a stub python --------------------------------------------------------

_STUB = """#!{bash}
# A python for deploy/install-torch.sh: the probe runs for real (against loopback), pip only logs.
if [ "$1" = -c ]; then exec {python} "$@"; fi
echo "$*" >> {log}
if [ "$5" = --dry-run ]; then cp {plan} "$7"; fi
"""


@pytest.fixture
def stub(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """(stub python, pip's log, a PATH folder without nvidia-smi)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("mktemp", "grep", "rm", "cp", "cat"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    log, plan = tmp_path / "pip.log", tmp_path / "plan.json"
    python = tmp_path / "python"
    python.write_text(
        _STUB.format(bash=shutil.which("bash"), python=sys.executable, log=log, plan=plan), encoding="utf-8"
    )
    python.chmod(0o755)
    yield python, log, bin_dir


def _plan(stub_python: Path, *names: str) -> None:
    report = {"install": [{"metadata": {"name": n, "version": "1"}} for n in names]}
    (stub_python.parent / "plan.json").write_text(json.dumps(report), encoding="utf-8")


def _run(python: Path, bin_dir: Path, index: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(bin_dir), "TORCH_INDEX_URL": index, "TORCH_PROBE_SECONDS": "2"}
    bash = shutil.which("bash")
    assert bash
    return subprocess.run([bash, str(SCRIPT), str(python)], env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def closed_port() -> Iterator[str]:
    """A loopback URL nothing listens on (bound, never listening: connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/whl/cpu"


@pytest.fixture
def answering_index() -> Iterator[str]:
    """A loopback index that answers for /whl/cpu/torch/."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/whl/cpu/torch/" else 404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"
    server.shutdown()
    server.server_close()


def test_an_answering_index_is_used(stub: tuple[Path, Path, Path], answering_index: str) -> None:
    python, log, bin_dir = stub
    result = _run(python, bin_dir, answering_index)
    assert result.returncode == 0, result.stderr
    assert log.read_text().splitlines() == [f"-m pip install --quiet --index-url {answering_index} torch=={PIN}"]


def test_an_unreachable_index_falls_back_to_pips_own(stub: tuple[Path, Path, Path], closed_port: str) -> None:
    python, log, bin_dir = stub
    _plan(python, "torch", "sympy", "filelock")
    result = _run(python, bin_dir, closed_port)
    assert result.returncode == 0, result.stderr
    assert "does not answer" in result.stderr
    assert log.read_text().splitlines()[-1] == f"-m pip install --quiet torch=={PIN}"


def test_the_fallback_refuses_cuda_without_a_gpu(stub: tuple[Path, Path, Path], closed_port: str) -> None:
    python, log, bin_dir = stub
    _plan(python, "torch", "nvidia-cublas-cu12", "triton")
    result = _run(python, bin_dir, closed_port)
    assert result.returncode == 1
    assert "CUDA build" in result.stderr and "TORCH_INDEX_URL" in result.stderr
    assert all("--dry-run" in line for line in log.read_text().splitlines())  # nothing installed


def test_the_fallback_takes_cuda_where_there_is_a_gpu(stub: tuple[Path, Path, Path], closed_port: str) -> None:
    python, log, bin_dir = stub
    _plan(python, "torch", "nvidia-cublas-cu12")
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\n", encoding="utf-8")
    (bin_dir / "nvidia-smi").chmod(0o755)
    assert _run(python, bin_dir, closed_port).returncode == 0
    assert log.read_text().splitlines()[-1] == f"-m pip install --quiet torch=={PIN}"


def test_an_empty_index_takes_pips_own_unchecked(stub: tuple[Path, Path, Path]) -> None:
    python, log, bin_dir = stub
    result = _run(python, bin_dir, "")
    assert result.returncode == 0, result.stderr
    assert log.read_text().splitlines() == [f"-m pip install --quiet torch=={PIN}"]
