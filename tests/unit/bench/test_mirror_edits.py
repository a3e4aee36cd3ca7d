"""bench/mirror_edits.py: a touched record: two words appended to a run found once, valid in every format."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # a script beside its siblings
from mirror_edits import extend_once  # noqa: E402

BODY = "Adversaries may dump the memory of the LSASS process to read credentials."
RUN = "Adversaries may dump the memory of"

CASES = {
    "yaml plain": (b"title: x\ndescription: " + BODY.encode() + b"\n", yaml.safe_load),
    "yaml block": (b"title: x\ndescription: |\n  " + BODY.encode() + b"\n  second line\n", yaml.safe_load),
    "yaml folded": (
        b"description: >-\n  Adversaries may dump the memory\n  of the LSASS process\n  " + BODY.encode() + b"\n",
        yaml.safe_load,
    ),
    "json": (json.dumps({"objects": [{"description": BODY + "\n(Citation: X)"}]}).encode(), json.loads),
    "toml": (b'[rule]\ndescription = """\n' + BODY.encode() + b'\n"""\n', lambda b: tomllib.loads(b.decode())),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_edit_extends_one_run_and_the_file_still_parses(name: str) -> None:
    raw, load = CASES[name]
    found = extend_once(raw, BODY, "quokka 1e5a9c0f")
    assert found is not None
    snippet, data = found
    assert data.count(b"quokka 1e5a9c0f") == 1 and data.replace(b" quokka 1e5a9c0f", b"") == raw
    assert f"{snippet} quokka 1e5a9c0f" in json.dumps(load(data))


def test_a_run_found_twice_or_inside_a_longer_word_is_not_used() -> None:
    twice = f"a: {BODY}\nb: {RUN}\n".encode()
    found = extend_once(twice, BODY, "quokka x")
    assert found is not None and found[0] != RUN  # the next run of six words, found once
    assert (
        extend_once(b"a: Adversaries may dump the memory offsets", "Adversaries may dump the memory off", "q") is None
    )
    assert extend_once(b"a: b", "too few words here", "q") is None


def test_a_record_without_a_long_run_is_extended_after_a_shorter_one() -> None:
    raw = b"Path: '%PROGRAMFILES%\\Apple\\Apple Application Support\\CoreFoundation.exe'\n"
    body = "Vulnerable executables:\n- %PROGRAMFILES%\\Apple\\Apple Application Support\\CoreFoundation.exe"
    assert extend_once(raw, body, "quokka q", 6) is None
    found = extend_once(raw, body, "quokka q", 3)
    assert found is not None and found[0] == "Apple Application Support"
    assert yaml.safe_load(found[1])["Path"].endswith("Apple Application Support quokka q\\CoreFoundation.exe")
