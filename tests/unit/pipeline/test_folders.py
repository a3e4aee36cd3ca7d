"""The folder reader: configuration, safe scanning by content hash, one record per file."""

from __future__ import annotations

import dataclasses
import errno
import io
import os
import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pipeline.folders import (
    FolderScan,
    FolderSpec,
    FolderUnreadable,
    Unreadable,
    load_folders,
    read_folder,
    scan_folder,
)
from secrag.error_kinds import kind_of
from secrag.errors import ConfigError
from tests.plugins.disk_faults import after_listing, before_listing, failing_open


def _spec(root: Path, **kw: object) -> FolderSpec:
    return FolderSpec(name="notes", path=root.resolve(), **kw)  # type: ignore[arg-type]


def test_config_resolves_paths_and_acl(tmp_path: Path):
    cfg = tmp_path / "folders.yaml"
    cfg.write_text(
        "folders:\n  - name: soc_notes\n    path: notes\n    tenant: acme\n"
        "    acl: {users: [alice], groups: [soc]}\n    max_file_mib: 1\n"
    )
    [spec] = load_folders(cfg)
    assert spec.path == (tmp_path / "notes").resolve()
    assert (spec.tenant, spec.users, spec.groups, spec.max_file_bytes) == (
        "acme",
        ("alice",),
        ("soc",),
        1024 * 1024,
    )
    assert load_folders(tmp_path / "absent.yaml") == []


@pytest.mark.parametrize(
    ("item", "line", "message"),
    [
        ("  - name: Bad Name\n    path: x\n", 2, "folders[0].name: 'Bad Name' must match"),
        ("  - name: ingested_x\n    path: x\n", 2, "folders[0].name: 'ingested_x' starts with 'ingested_'"),
        ("  - name: sigma\n    path: x\n", 2, "folders[0].name: 'sigma' is already used by another source"),
        ("  - name: ok\n    path: x\n  - name: ok\n    path: y\n", 4, "folders[1].name: 'ok' is already used"),
        ("  - name: ok\n", 2, "folders[0].path: Field required"),
        ("  - name: ok\n    path: x\n    colour: red\n", 4, "folders[0].colour: Extra inputs are not permitted"),
        (
            "  - name: ok\n    path: x\n    acl: {users: alice}\n",
            4,
            "folders[0].acl.users: Input should be a valid list",
        ),
        (
            "  - name: ok\n    path: x\n    max_file_mib: -1\n",
            4,
            "folders[0].max_file_mib: Input should be greater than 0",
        ),
        ("  - name: ok\n    path: x\n    tenant: 42\n", 4, "folders[0].tenant: Input should be a valid string"),
    ],
)
def test_config_errors_name_file_line_and_field(tmp_path: Path, item: str, line: int, message: str):
    cfg = tmp_path / "folders.yaml"
    cfg.write_text("folders:\n" + item)
    with pytest.raises(ConfigError) as caught:
        load_folders(cfg, reserved=frozenset({"sigma"}))
    assert str(caught.value).startswith(f"{cfg}:{line}: {message}")


def test_older_files_name_users_and_groups_at_the_top(tmp_path: Path):
    cfg = tmp_path / "folders.yaml"
    cfg.write_text(
        "folders:\n  - {name: a, path: x, tenant: t, users: [al], groups: [soc]}\n"
        "  - {name: b, path: y, public: true}\n"
    )
    assert [(s.users, s.groups, s.tenant, s.error) for s in load_folders(cfg)] == [
        (("al",), ("soc",), "t", ""),
        ((), (), None, ""),
    ]
    cfg.write_text("# no folders yet\nfolders:\n")
    assert load_folders(cfg) == []


@pytest.mark.parametrize(
    ("item", "line", "message"),
    [
        # users or groups without a tenant used to publish as public documents
        (
            "  - name: bad\n    path: x\n    acl: {users: [alice]}\n",
            4,
            "folders[1].acl.users: folder bad is not published: users and groups need a tenant",
        ),
        (
            "  - name: bad\n    path: x\n    acl:\n      groups: [soc]\n",
            5,
            "folders[1].acl.groups: folder bad is not published: users and groups need a tenant",
        ),
        ("  - name: bad\n    path: x\n    users: [al]\n", 4, "folders[1].users: folder bad is not published: users"),
        # saying nothing is no longer public
        ("  - name: bad\n    path: x\n", 2, "folders[1].tenant: folder bad is not published: say who sees"),
        (
            "  - name: bad\n    path: x\n    public: true\n    tenant: acme\n",
            4,
            "folders[1].public: folder bad is not published: public documents take no tenant, users or groups",
        ),
        (
            "  - name: bad\n    path: x\n    public: false\n",
            2,
            "folders[1].tenant: folder bad is not published: say who sees",
        ),
    ],
)
def test_a_folder_that_does_not_say_who_sees_it_is_refused_alone(tmp_path: Path, item: str, line: int, message: str):
    cfg = tmp_path / "folders.yaml"
    cfg.write_text("folders:\n  - {name: good, path: g, tenant: acme}\n" + item)
    good, bad = load_folders(cfg)
    assert good.error == "" and good.tenant == "acme"
    assert bad.name == "bad" and bad.error.startswith(f"{cfg}:{line + 1}: {message}"), bad.error


def test_an_empty_tenant_is_a_file_error(tmp_path: Path):
    cfg = tmp_path / "folders.yaml"
    cfg.write_text("folders:\n  - {name: a, path: x, tenant: ''}\n")
    with pytest.raises(ConfigError, match="folders\\[0\\].tenant: String should have at least 1 character"):
        load_folders(cfg)


def test_the_example_file_is_valid():
    example = Path(__file__).resolve().parents[3] / "folders.example.yaml"  # at the top of the checkout
    public, private = load_folders(example)  # the public folder first: an anonymous newcomer sees it
    assert (private.name, private.tenant, private.users, private.groups) == (
        "soc_runbooks",
        "acme",
        ("alice", "bob"),
        ("soc",),
    )
    assert (public.name, public.tenant, public.error, private.error) == ("shared_advisories", None, "", "")


def test_symlinks_large_files_and_escapes_are_refused(tmp_path: Path):
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    (root / "ok.txt").write_text("fine")
    (root / "sub" / "big.md").write_text("x" * 2000)
    (root / "link.txt").symlink_to(outside)
    (root / "linkdir").symlink_to(tmp_path)
    (root / "ignored.exe").write_bytes(b"MZ")
    read = read_folder(_spec(root, max_file_bytes=1000))
    assert [r.doc_id for r in read.records] == ["notes:ok.txt"]
    reasons = {s.path: s.reason for s in read.skipped}
    assert reasons.keys() == {"link.txt", "linkdir", "sub/big.md"}
    assert "symlink" in reasons["link.txt"] and "exceeds" in reasons["sub/big.md"]


def test_records_carry_paths_hashes_and_technique_ids(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "n.md").write_text("# Dumping\nSee T1003.001 and t1059")
    (tmp_path / "empty.txt").write_text("  \n")
    read = read_folder(_spec(tmp_path))
    [record] = read.records
    assert record.doc_id == "notes:a/n.md" and record.title == "Dumping"
    assert record.techniques == ("T1003.001", "T1059")
    assert record.metadata["sha256"] == read.scan.files["a/n.md"].sha256
    assert [(s.path, s.reason) for s in read.skipped] == [("empty.txt", "no text")]


def test_scan_digest_follows_content_not_mtime(tmp_path: Path):
    (tmp_path / "a.txt").write_text("one")
    first = scan_folder(_spec(tmp_path))
    (tmp_path / "a.txt").write_text("one")
    assert scan_folder(_spec(tmp_path), first.files).digest() == first.digest()
    (tmp_path / "a.txt").write_text("two")
    assert scan_folder(_spec(tmp_path), first.files).digest() != first.digest()


def test_missing_folder_is_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="not a directory"):
        scan_folder(_spec(tmp_path / "nope"))


def test_bad_files_are_skipped_with_their_reason_while_the_rest_publish(tmp_path: Path):
    import os

    from pipeline.folders import FolderSpec, read_folder

    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.md").write_text("# Good\nfine\n")
    (root / "deep.json").write_text("[" * 5000 + "]" * 5000)
    (root / "deep.yaml").write_text("a: " + "[" * 200 + "]" * 200 + "\n")
    os.mkfifo(root / "pipe.md")  # a FIFO named like a document: never opened, never waited on
    (root / "big.txt").write_bytes(b"x" * 40_000)
    read = read_folder(FolderSpec(name="docs", path=root, max_file_bytes=20_000))
    assert [r.upstream_id for r in read.records] == ["good.md"]
    reasons = {s.path: s.reason for s in read.skipped}
    assert "nests 5000 levels" in reasons["deep.json"]
    assert "nests deeper than" in reasons["deep.yaml"]
    assert "not a regular file" in reasons["pipe.md"]
    assert "exceeds the 20000-byte limit" in reasons["big.txt"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "a.md").write_text("# Alpha\n")
    (root / "sub" / "b.md").write_text("# Bravo\n")
    (root / "sub" / "deeper" / "c.md").write_text("# Charlie\n")
    return root


def test_a_directory_replaced_by_a_file_mid_scan_refuses_the_scan(tree: Path, monkeypatch: pytest.MonkeyPatch):
    def replace() -> None:
        shutil.rmtree(tree / "sub")
        (tree / "sub").write_text("a file now")

    before_listing(monkeypatch, tree / "sub", replace)
    with pytest.raises(FolderUnreadable, match="sub") as refused:
        scan_folder(_spec(tree))
    assert list(refused.value.paths) == ["sub"] and kind_of(refused.value) == "fetch_failed"


def test_a_directory_removed_during_the_walk_refuses_the_scan(tree: Path, monkeypatch: pytest.MonkeyPatch):
    before_listing(monkeypatch, tree / "sub" / "deeper", lambda: shutil.rmtree(tree / "sub" / "deeper"))
    with pytest.raises(FolderUnreadable) as refused:
        read_folder(_spec(tree))
    assert list(refused.value.paths) == ["sub/deeper"]


@pytest.mark.parametrize("where", [".", "sub", "sub/deeper"])
def test_a_directory_that_cannot_be_listed_refuses_the_scan(tree: Path, monkeypatch: pytest.MonkeyPatch, where: str):
    def fail() -> None:
        raise OSError(errno.EIO, "Input/output error", str(tree / where))

    before_listing(monkeypatch, (tree / where).resolve(), fail)
    with pytest.raises(FolderUnreadable, match="Input/output error") as refused:
        scan_folder(_spec(tree))
    assert refused.value.paths == {where: "Input/output error"}


def test_a_folder_whose_root_cannot_be_read_is_unreadable_not_missing(tree: Path, monkeypatch: pytest.MonkeyPatch):
    real, resolved = os.stat, tree.resolve()

    def stat(path, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202 - os.stat's signature
        if Path(path) == resolved:
            raise OSError(errno.ESTALE, "Stale file handle", str(path))
        return real(path, *args, **kw)

    monkeypatch.setattr(os, "stat", stat)
    with pytest.raises(FolderUnreadable, match="Stale file handle"):
        scan_folder(_spec(tree))


def test_a_file_removed_during_the_walk_is_gone(tree: Path, monkeypatch: pytest.MonkeyPatch):
    after_listing(monkeypatch, tree / "sub", lambda: (tree / "sub" / "b.md").unlink())
    read = read_folder(_spec(tree))
    assert [r.upstream_id for r in read.records] == ["a.md", "sub/deeper/c.md"]
    assert read.kept == () and read.skipped == ()  # gone: nothing kept, nothing to report


def test_a_file_whose_directory_was_replaced_after_listing_is_gone(tree: Path, monkeypatch: pytest.MonkeyPatch):
    def replace() -> None:
        shutil.rmtree(tree / "sub" / "deeper")
        (tree / "sub" / "deeper").write_text("a file now")

    after_listing(monkeypatch, tree / "sub" / "deeper", replace)
    scan = scan_folder(_spec(tree))
    assert set(scan.files) == {"a.md", "sub/b.md"} and scan.unreadable == ()


def test_a_fifo_device_or_socket_is_skipped_never_opened(tree: Path, monkeypatch: pytest.MonkeyPatch):
    os.mkfifo(tree / "sub" / "pipe.md")
    real_open = os.open
    opened: list[str] = []

    def spy(path, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202 - os.open's signature
        opened.append(str(path))
        return real_open(path, *args, **kw)

    monkeypatch.setattr(os, "open", spy)
    read = read_folder(_spec(tree))
    assert {s.path: s.reason for s in read.skipped} == {"sub/pipe.md": "not a regular file (FIFO, device or socket)"}
    assert not [p for p in opened if p.endswith("pipe.md")] and read.kept == ()


def _read_as_another_user(spec: FolderSpec) -> Any:  # noqa: ANN401 - read_folder's result
    """read_folder as this user, or, when the tests run as root (who reads any file), in a forked child that
    dropped to `nobody` first; its result comes back pickled through a pipe."""
    if os.geteuid() != 0:
        return read_folder(spec)
    readable, writable = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's coverage is not collected
        try:
            os.close(readable)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            with os.fdopen(writable, "wb") as out:
                pickle.dump(read_folder(spec), out)
        finally:
            os._exit(0)
    os.close(writable)
    with os.fdopen(readable, "rb") as answer:
        data = answer.read()
    os.waitpid(child, 0)
    return pickle.loads(data)


def test_a_file_the_scanning_user_cannot_read_keeps_its_document(tree: Path):
    """A real permission fault: the scan runs as a user the file denies (as `nobody` under root)."""
    shared = Path(tempfile.mkdtemp(prefix="secrag-folder-"))  # tmp_path's parents are root's own (0700)
    try:
        shared.chmod(0o755)
        root = shared / "docs"
        shutil.copytree(tree, root)
        for path in [root, *root.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        (root / "sub" / "b.md").chmod(0)
        read = _read_as_another_user(_spec(root))
    finally:
        shutil.rmtree(shared)
    assert [r.upstream_id for r in read.records] == ["a.md", "sub/deeper/c.md"]
    assert read.kept == ("sub/b.md",) and "Permission denied" in read.skipped[0].reason


@pytest.mark.parametrize(
    ("call", "error"),
    [
        ("open", OSError(errno.EACCES, "Permission denied")),
        ("open", OSError(errno.ESTALE, "Stale file handle")),
        ("read", OSError(errno.EIO, "Input/output error")),
    ],
)
def test_a_file_that_cannot_be_read_keeps_its_document(
    tree: Path, monkeypatch: pytest.MonkeyPatch, call: str, error: OSError
):
    target = tree / "sub" / "b.md"
    if call == "open":
        failing_open(monkeypatch, target, error)
    else:
        real_fdopen = os.fdopen

        class Failing(io.BufferedReader):
            def read(self, size: int | None = -1) -> bytes:
                raise error

        def failing_fdopen(fd, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202 - os.fdopen's signature
            if os.readlink(f"/proc/self/fd/{fd}") == str(target):
                return Failing(io.FileIO(fd, "rb"))
            return real_fdopen(fd, *args, **kw)

        monkeypatch.setattr(os, "fdopen", failing_fdopen)
    read = read_folder(_spec(tree))
    assert [r.upstream_id for r in read.records] == ["a.md", "sub/deeper/c.md"]
    assert read.kept == ("sub/b.md",)
    assert {s.path: s.reason for s in read.skipped} == {"sub/b.md": f"unreadable: {error.strerror}"}


def test_an_unreadable_file_changes_the_digest_apart_from_a_gone_one(tree: Path):
    whole = scan_folder(_spec(tree))
    gone = FolderScan({k: v for k, v in whole.files.items() if k != "a.md"})
    unreadable = dataclasses.replace(gone, unreadable=(Unreadable("a.md", "unreadable: Permission denied"),))
    assert len({whole.digest(), gone.digest(), unreadable.digest()}) == 3
