"""Settings from environment variables (and `.env`), read on first use, never at import."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    """Every knob secrag reads from the environment; see the README's configuration table."""

    model_config = SettingsConfigDict(env_prefix="SECRAG_", env_file=".env", extra="ignore")

    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("DATABASE_URL", "SECRAG_DATABASE_URL"),
        description="PostgreSQL URL; when unset secrag starts its embedded server in data_dir.",
    )
    data_dir: Path = Field(default=Path(".secrag"), description="Embedded database and caches.")
    database_name: str = Field(default="secrag", description="Database created on the embedded server.")
    dagster_database_name: str = Field(default="secrag_dagster", description="Dagster instance database.")
    sql_dir: Path = Field(default=REPO_ROOT / "sql", description="Migrations and named queries.")
    connect_timeout: int = Field(default=5, ge=1, le=120, description="Seconds to wait for the database.")
    reader_statement_timeout_ms: int = Field(default=2000, ge=100)

    @property
    def pgdata(self) -> Path:
        return (self.data_dir / "pgdata").resolve()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (cached; tests clear the cache to change them)."""
    return Settings()
