"""`folders/<name>` over a directory the operating system really refuses to list (no patched scandir): the tests
run as root, whom a mode of 000 does not stop, so the refused run is a materialization in a child process
that runs as root without the capabilities that bypass file permissions (setpriv drops CAP_DAC_OVERRIDE and
CAP_DAC_READ_SEARCH from its bounding set). The folder asset records the failure naming the directory, and
the store keeps serving every document it held."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from psycopg import conninfo

from pipeline.folders import FolderSpec
from pipeline.sources.mirror import Mirror
from tests.plugins.graph import Harness, harness

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::DeprecationWarning:dagster")
NAME = "team_docs"
KEY = f"key:folders/{NAME}"
REPO = Path(__file__).resolve().parents[4]
SETPRIV = shutil.which("setpriv")
WITHOUT_DAC = ["--bounding-set", "-dac_override,-dac_read_search", "--inh-caps", "-dac_override,-dac_read_search"]

# The child: the pipeline's definitions of this one folder and its resources, the folder asset materialized
# on an ephemeral Dagster instance; prints whether the run succeeded and the failure's metadata.
CHILD = """
import json, sys, warnings
from pathlib import Path
import dagster as dg
from pipeline.definitions import build_definitions
from pipeline.folders import FolderSpec
from pipeline.resources import EmbedderResource, StoreResource, UpstreamResource
from secrag.settings import get_settings

warnings.filterwarnings("ignore")
url, root, work = sys.argv[1:4]
spec = FolderSpec(name="team_docs", path=Path(root), tenant="acme")
resources = {"store": StoreResource(database_url=url, work_dir=work), "upstream": UpstreamResource(),
             "embedder": EmbedderResource()}
defs = build_definitions(get_settings(), {}, [spec], resources=resources)
job = defs.resolve_implicit_global_asset_job_def().get_subset(
    asset_selection=dg.AssetSelection.from_string("key:folders/team_docs").resolve(defs.resolve_asset_graph()))
result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)
failures = {}
for event in result.all_events:
    if event.event_type_value == "STEP_FAILURE":
        data = event.event_specific_data
        failures[event.step_key] = (
            {k: v.value for k, v in data.user_failure_data.metadata.items()} if data.user_failure_data
            else data.error.message.strip()
        )
print(json.dumps({"success": result.success, "failures": failures}))
"""


@contextmanager
def _over_tcp(url: str) -> Iterator[str]:
    """`url` reached over a loopback TCP port that this process forwards to the server's unix socket: the
    embedded server's socket lies in its data directory, which only its own account may search."""
    params = conninfo.conninfo_to_dict(url)
    path = f"{params['host']}/.s.PGSQL.{params.get('port') or 5432}"
    listener = socket.create_server(("127.0.0.1", 0))

    def pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(1 << 16):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def accept() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed: the test is over
            server = socket.socket(socket.AF_UNIX)
            server.connect(path)
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=pump, args=(a, b), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield conninfo.make_conninfo(url, host="127.0.0.1", port=str(listener.getsockname()[1]))
    finally:
        listener.close()


def _without_dac(*command: str) -> subprocess.CompletedProcess[str]:
    """`command` run without the capabilities that bypass file permissions (another user has none anyway)."""
    if os.geteuid() == 0:
        assert SETPRIV, "as root, the test needs setpriv (util-linux)"
        command = (SETPRIV, *WITHOUT_DAC, *command)
    return subprocess.run(list(command), cwd=REPO, capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture
def served(tmp_path: Path, db_url: str, mirror: Mirror, small_specs) -> Iterator[tuple[Harness, Path]]:  # noqa: ANN001
    """team_docs published once (a.md, sub/b.md, sub/deeper/c.md); its `sub` made readable again after."""
    root = tmp_path / "docs"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "a.md").write_text("# Alpha\nabout T1003.001\n")
    (root / "sub" / "b.md").write_text("# Bravo\nbravo text\n")
    (root / "sub" / "deeper" / "c.md").write_text("# Charlie\ncharlie text\n")
    spec = FolderSpec(name=NAME, path=root.resolve(), tenant="acme")
    h = harness(db_url, mirror, tmp_path / "work", small_specs, folders=[spec])
    h.materialize(KEY)
    yield h, root.resolve()
    os.chmod(root / "sub", 0o755)


def _store(h: Harness) -> dict[str, object]:
    with h.connect() as conn:
        return {
            "documents": conn.execute(
                "SELECT doc_id, content_hash, body FROM documents WHERE source = %s ORDER BY doc_id", [NAME]
            ).fetchall(),
            "chunks": conn.execute("SELECT count(*) FROM chunks WHERE source = %s", [NAME]).fetchone(),
            "removed": conn.execute(
                "SELECT count(*) FROM document_changes WHERE source = %s AND change = 'removed'", [NAME]
            ).fetchone(),
            "version": conn.execute("SELECT current_version FROM sources WHERE name = %s", [NAME]).fetchone(),
        }


def test_a_directory_the_system_refuses_to_list_is_recorded_and_every_document_kept(
    served: tuple[Harness, Path],
) -> None:
    h, root = served
    before = _store(h)
    assert len(before["documents"]) == 3  # type: ignore[arg-type]
    os.chmod(root / "sub", 0)
    probe = _without_dac(sys.executable, "-c", f"import os; os.listdir({str(root / 'sub')!r})")
    assert "PermissionError" in probe.stderr, probe.stderr  # the child is really refused (root is not)

    with _over_tcp(h.url) as url:
        child = _without_dac(sys.executable, "-c", CHILD, url, str(root), str(h.resources["store"].work_dir))
    assert child.returncode == 0, child.stderr[-3000:]
    outcome = json.loads(child.stdout.strip().splitlines()[-1])
    assert outcome == {
        "success": False,
        "failures": {"folders__team_docs": {"error_kind": "fetch_failed", "unlisted": {"sub": "Permission denied"}}},
    }

    assert _store(h) == before  # every document still served, none announced removed
    with h.connect() as conn:
        row = conn.execute(
            "SELECT status, phase, error_kind, error_detail, details FROM source_versions "
            "WHERE source = %s ORDER BY id DESC LIMIT 1",
            [NAME],
        ).fetchone()
    assert row is not None
    status, phase, kind, detail, details = row
    assert (status, phase, kind, details) == (
        "failed",
        "fetch",
        "fetch_failed",
        {"unlisted": {"sub": "Permission denied"}},
    )
    assert "sub (Permission denied)" in detail
