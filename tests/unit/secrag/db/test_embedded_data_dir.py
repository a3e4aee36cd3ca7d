"""The embedded server's data directory is checked before a start, with a hint for each refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from secrag.db.embedded_data_dir import adopt_legacy_data_dir, check_data_dir
from secrag.errors import EmbeddedServerError


def test_an_empty_or_new_folder_is_accepted(tmp_path: Path) -> None:
    check_data_dir(tmp_path / "new" / "pgdata")
    assert (tmp_path / "new").is_dir()
    (tmp_path / "empty").mkdir()
    check_data_dir(tmp_path / "empty")


def test_a_folder_of_something_else_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pgdata").mkdir()
    (tmp_path / "pgdata" / "notes.txt").write_text("mine")
    with pytest.raises(EmbeddedServerError, match="not a PostgreSQL data directory") as info:
        check_data_dir(tmp_path / "pgdata")
    assert "SECRAG_DATA_DIR" in (info.value.hint or "")


def test_a_folder_that_is_not_postgresql_s_is_never_handed_over(tmp_path: Path) -> None:
    adopt_legacy_data_dir(tmp_path)  # no PG_VERSION: nothing to do, whoever runs it
    assert not any(tmp_path.iterdir())
