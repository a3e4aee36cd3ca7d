"""Every bench script still imports and answers --help: a script names the code it measures, and a rename must not
leave one broken until somebody runs it (the lint's type check covers the packages, not bench/)."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shlex
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py"))


def load(script: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))  # scripts import bench/lib and their siblings
    spec = importlib.util.spec_from_file_location(f"bench_{script[:-3]}", BENCH / script)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)  # runs the imports and definitions; main() runs only as __main__
    return module


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_script_answers_help(
    script: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load(script, monkeypatch)
    if not hasattr(module, "main"):
        return  # a module other scripts import: importing it was the check
    monkeypatch.setattr(sys, "argv", [script, "--help"])
    with pytest.raises(SystemExit) as exited:
        module.main()
    assert exited.value.code == 0
    assert "usage:" in capsys.readouterr().out


ROOT = BENCH.parent
NAMED = re.compile(r"\bbench/[a-z_/]+\.py\b")
# Where a bench is named: the docs and the code. The CHANGELOG and the applied migrations keep their history.
NAMING = [
    "README.md",
    "Makefile",
    ".ci",
    "pyproject.toml",
    "bench",
    "docs",
    "deploy",
    "secrag",
    "secrag_cli",
    "serving",
    "pipeline",
    "tests",
]


def test_every_bench_named_exists() -> None:
    files = [p for name in NAMING for p in ([ROOT / name] if (ROOT / name).is_file() else (ROOT / name).rglob("*"))]
    named = {
        f"{path.relative_to(ROOT)}: {match}"
        for path in files
        if path.is_file() and path.suffix in {".py", ".md", ".yaml", ".yml", ".toml", ".sh", ""}
        for match in NAMED.findall(path.read_text(encoding="utf-8", errors="replace"))
        if not (ROOT / match).is_file()
    }
    assert not named, "retired benches still named:\n" + "\n".join(sorted(named))


def test_the_front_door_names_every_script() -> None:
    front_door = (BENCH / "README.md").read_text(encoding="utf-8")
    unnamed = [script for script in SCRIPTS if not re.search(rf"(`|bench/){re.escape(script)}\b", front_door)]
    assert not unnamed, f"bench/README.md names no question or place for: {unnamed}"


class Parsed(Exception):
    """Raised once a script's arguments parsed: the test stops its main() there."""


COMMAND = re.compile(r"python (bench/[a-z_]+\.py)((?:\\\n|[^`\n])*)")


def documented_commands() -> list[tuple[str, str]]:
    pages = [ROOT / "README.md", BENCH / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = {(m[1], m[2]) for page in pages for m in COMMAND.finditer(page.read_text(encoding="utf-8"))}
    return sorted(found)


@pytest.mark.parametrize(("script", "arguments"), documented_commands())
def test_every_documented_command_parses(script: str, arguments: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The docs' `python bench/X.py ...` commands name only flags the script has (`[--flag]` read as given)."""
    words = shlex.split(arguments.replace("\\\n", " ").split(" #")[0].replace("[", "").replace("]", ""))
    module = load(Path(script).name, monkeypatch)
    parse = argparse.ArgumentParser.parse_args

    def parsed(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        parse(self, *args, **kwargs)  # type: ignore[arg-type]
        raise Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parsed)
    monkeypatch.setattr(sys, "argv", [script, *(w for w in words if w != "&")])
    with pytest.raises(Parsed):
        module.main()
