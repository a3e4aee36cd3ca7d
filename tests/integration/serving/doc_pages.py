"""A docs page's own lines, run as written: its fenced blocks in order, with `.venv/bin/` as this interpreter's
folder and the API's documented address (localhost:8000) as a loopback test server's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from secrag.settings import REPO_ROOT

_FENCE = re.compile(r"^( *)```(\w+)\n(.*?)^\1```", re.MULTILINE | re.DOTALL)
_ADDRESSES = ("http://127.0.0.1:8000", "http://localhost:8000", "localhost:8000")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language (sh, text, python, yaml, json) and its text."""

    lang: str
    text: str


def blocks(page: str, section: str | None = None) -> list[Block]:
    """The fenced blocks of docs/<page> (under one `## ` heading when given), indented ones included."""
    text = (REPO_ROOT / "docs" / page).read_text(encoding="utf-8")
    if section is not None:
        text = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [  # a block inside a numbered step is indented as its fence
        Block(lang, re.sub(f"^{indent}", "", body, flags=re.MULTILINE)) for indent, lang, body in _FENCE.findall(text)
    ]


def localised(text: str, api: str | None) -> str:
    """The text with `.venv/bin/` as this interpreter's folder and the documented API address as `api`."""
    text = text.replace(".venv/bin/", f"{Path(sys.executable).parent}/")
    if api is not None:
        for address in _ADDRESSES:
            text = text.replace(address, api)
    return text


def run_sh(script: str, cwd: Path, api: str | None = None, env: dict[str, str] | None = None) -> str:
    """Run a shell block in `cwd` (bash, failing on the first error); its standard output."""
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    shell = f"set -euo pipefail\n{localised(script, api)}"
    result = subprocess.run(
        ["bash", "-c", shell], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, f"{script}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    return result.stdout


def run_page(page: str, cwd: Path, api: str | None = None, env: dict[str, str] | None = None) -> list[str]:
    """Every `sh` block of the page in order, as `run_blocks` runs them."""
    return run_blocks(blocks(page), cwd, api, env)


def run_blocks(found: list[Block], cwd: Path, api: str | None = None, env: dict[str, str] | None = None) -> list[str]:
    """Every `sh` block in order; a `text` block right after one lists lines its output holds (among others;
    `…` stands for any text). The outputs, one per `sh` block."""
    outputs = []
    for i, block in enumerate(found):
        if block.lang != "sh":
            continue
        out = run_sh(block.text, cwd, api, env)
        outputs.append(out)
        if i + 1 < len(found) and found[i + 1].lang == "text":
            printed = [" ".join(line.split()) for line in out.splitlines()]
            for line in found[i + 1].text.splitlines():
                shown = re.compile(".*".join(re.escape(" ".join(part.split())) for part in line.split("…")))
                assert any(shown.fullmatch(p) for p in printed), f"{line!r} not printed by\n{block.text}\n{out}"
    return outputs
