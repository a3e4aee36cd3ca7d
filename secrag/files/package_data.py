"""Files that ship inside the installed packages (SQL, bundled YAML), found through importlib.resources."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from secrag.errors import ConfigError


def package_path(package: str, *parts: str) -> Path:
    """A file or folder shipped inside `package`, as a path (pip installs packages as plain files)."""
    root = files(package)
    if not isinstance(root, Path):
        raise ConfigError(
            f"package {package} is not installed as plain files ({type(root).__name__})",
            hint="install secrag with pip into a virtual environment, not as a zip archive",
        )
    return root.joinpath(*parts)


def sql_dir() -> Path:
    """The SQL secrag ships: `migrations/`, `queries/` and `schema.sql` (the repository's sql/ folder)."""
    return package_path("secrag.sql")
