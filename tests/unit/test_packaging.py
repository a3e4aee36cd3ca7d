"""pyproject.toml ships every package and every data file (SQL, YAML) the code loads."""

from __future__ import annotations

import tomllib
from pathlib import Path

from secrag.settings import REPO_ROOT

_SETUPTOOLS = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def _folder(package: str) -> Path:
    mapped = _SETUPTOOLS.get("package-dir", {})
    return REPO_ROOT / mapped[package] if package in mapped else REPO_ROOT / package.replace(".", "/")


def test_every_package_folder_is_listed() -> None:
    """Code packages, and the folders holding only package data (listed too: setuptools warns at every install
    about a data folder it could import but was not told about)."""
    tops = ("secrag", "secrag_cli", "pipeline", "serving")
    on_disk = {
        ".".join(p.parent.relative_to(REPO_ROOT).parts) for top in tops for p in (REPO_ROOT / top).rglob("__init__.py")
    }
    on_disk.add("secrag.sql")  # the repository's sql/ folder, mapped by package-dir
    data = {
        ".".join(p.parent.relative_to(REPO_ROOT).parts)
        for top in tops
        for p in (REPO_ROOT / top).rglob("*")
        if p.suffix in (".sql", ".yaml") and not (p.parent / "__init__.py").exists()
    }
    data |= {"secrag.sql." + p.parent.name for p in (REPO_ROOT / "sql").glob("*/*.sql")}
    assert set(_SETUPTOOLS["packages"]) == on_disk | data


def test_every_sql_and_yaml_file_is_package_data() -> None:
    globs = _SETUPTOOLS["package-data"]
    shipped = {
        path for package, patterns in globs.items() for pattern in patterns for path in _folder(package).glob(pattern)
    }
    wanted = {
        p
        for package in _SETUPTOOLS["packages"]
        for p in _folder(package).rglob("*")
        if p.suffix in (".sql", ".yaml") and "__pycache__" not in p.parts
    }
    assert wanted and wanted <= shipped, sorted(str(p.relative_to(REPO_ROOT)) for p in wanted - shipped)
