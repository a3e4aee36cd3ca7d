"""The folder reader: configuration, safe scanning by content hash, one record per file."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.folders import FolderSpec, load_folders, read_folder, scan_folder
from secrag.errors import ConfigError


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
    private, public = load_folders(example)
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
