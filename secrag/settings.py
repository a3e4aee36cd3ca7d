"""Settings from environment variables (and `.env`), read on first use, never at import."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from .embedder import DEFAULT_MODEL
from .package_data import sql_dir

# The checkout secrag runs from: dagster.yaml, workspace.yaml and folders.yaml live here.
REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR_NAME = ".secrag"
_PROJECT_FILES = ("dagster.yaml", "workspace.yaml")


def find_project(start: Path) -> Path | None:
    """The nearest directory from start up that is a secrag project: it holds a data directory
    (`.secrag/`) or the project files (dagster.yaml and workspace.yaml)."""
    for folder in (start, *start.parents):
        if (folder / DATA_DIR_NAME).is_dir() or all((folder / name).is_file() for name in _PROJECT_FILES):
            return folder
    return None


def default_data_dir() -> Path:
    """`.secrag` of the project the working directory is in, so every command finds the same data
    from any of its subdirectories; outside a project, `.secrag` here (which no command but
    `secrag run` / `secrag db start` ever creates)."""
    here = Path.cwd()
    return (find_project(here) or here) / DATA_DIR_NAME


class Settings(BaseSettings):
    """Every knob secrag reads from the environment; see docs/configuration.md (Settings)."""

    model_config = SettingsConfigDict(env_prefix="SECRAG_", env_file=".env", extra="ignore")

    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "SECRAG_DATABASE_URL"),
        description="PostgreSQL URL; when unset secrag starts its embedded server in data_dir.",
    )
    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Embedded database and caches; default: `.secrag` of the project the working directory is in.",
    )
    database_name: str = Field(default="secrag", description="Database created on the embedded server.")
    dagster_database_name: str = Field(default="secrag_dagster", description="Dagster instance database.")
    embedded_shared_buffers: str = Field(
        default="512MB",
        pattern=r"^\d+\s*(kB|MB|GB)$",
        description="shared_buffers of the embedded server (applied with one restart when it changes).",
    )
    sql_dir: Path = Field(default_factory=sql_dir, description="Migrations and named queries (shipped in the package).")
    connect_timeout: int = Field(default=5, ge=1, le=120, description="Seconds to wait for the database.")
    reader_statement_timeout_ms: int = Field(default=2000, ge=100)
    reader_aggregate_timeout_ms: int = Field(
        default=60_000,
        ge=100,
        description="Statement timeout of the API's store-wide reads (the spelling vocabulary), which run "
        "at start-up and then in the background, never inside a request's reader_statement_timeout_ms.",
    )

    # Upstreams (fetchers and probes)
    upstream_mirror: Path | None = Field(
        default=None, description="Snapshot folder (like ../shared/upstream) to serve as local mirrors."
    )
    github_api_base: str = Field(default="https://api.github.com", description="GitHub releases API base.")
    github_token: str | None = Field(default=None, validation_alias=AliasChoices("GITHUB_TOKEN", "SECRAG_GITHUB_TOKEN"))
    http_allowed_hosts: list[str] = Field(
        default_factory=list, description="Hosts allowed in addition to the built-in upstream hosts."
    )
    http_allow_file: bool = Field(default=False, description="Allow file:// URLs (mirrors, tests).")
    http_max_bytes: int = Field(default=100 * 1024 * 1024, ge=1024)
    probe_timeout: float = Field(default=20.0, gt=0, description="Seconds per upstream version probe.")
    fetch_timeout: float = Field(default=600.0, gt=0, description="Seconds per upstream fetch.")

    # Parsing and publishing
    max_shrink: float = Field(default=0.5, ge=0, le=1, description="Refuse versions that shrink by more.")
    max_error_share: float = Field(default=0.2, ge=0, le=1, description="Fail a source past this file error share.")
    chunk_target_chars: int = Field(default=1000, ge=200)
    chunk_overlap_chars: int = Field(default=200, ge=0)
    chunk_across_paragraphs: bool = True  # chunks overlap across paragraphs, not only inside long ones

    folders_file: Path | None = Field(
        default=None, description="YAML list of user-document folders (default: folders.yaml if present)."
    )

    # Embeddings
    embedding_model: str = Field(default=DEFAULT_MODEL, description="Must be on the allowlist.")
    embedding_batch_size: int = Field(default=64, ge=1, le=1024)
    torch_threads: int = Field(default=0, ge=0, description="torch threads of SECRAG_QUERY_ENCODER=torch; 0 = default.")
    embedding_threads: int = Field(
        default=0, ge=0, le=64, description="onnxruntime threads embedding documents; 0 = one per core."
    )
    model_cache_dir: Path | None = Field(
        default=None, description="Where the ONNX exports of the models are kept; unset = <data_dir>/models."
    )

    @property
    def pgdata(self) -> Path:
        return (self.data_dir / "pgdata").resolve()

    @property
    def models_dir(self) -> Path:
        """Exported models (the ONNX document and query encoders); the container image bakes them in."""
        return self.model_cache_dir or self.data_dir / "models"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (cached; tests clear the cache to change them)."""
    return Settings()
