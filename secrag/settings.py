"""Settings from environment variables (and `.env`), read on first use, never at import."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic.json_schema import JsonDict
from pydantic_settings import BaseSettings, SettingsConfigDict

from secrag.files.package_data import sql_dir
from secrag.freshness import DEFAULT_POLL_SECONDS, POLL_FLOOR_SECONDS, POLL_JITTER
from secrag.hook_names import hook_name

# The checkout secrag runs from: dagster.yaml, workspace.yaml and folders.yaml live here.
REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR_NAME = ".secrag"
_PROJECT_FILES = ("dagster.yaml", "workspace.yaml")
# The embedding model by default (secrag/models/models.yaml): int8 is 1.8x faster to embed with here and scores
# as fp32 does on the dev queries (hybrid nDCG@10 0.613 vs 0.614). fp32 stays selectable.
DEFAULT_MODEL = "all-MiniLM-L6-v2-int8"


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


SETTINGS_CONFIG = SettingsConfigDict(env_prefix="SECRAG_", env_file=".env", extra="ignore")


def doc_default(text: str) -> JsonDict:
    """`json_schema_extra` of a field whose default is computed: how the settings table states it."""
    return {"doc_default": text}


class DatabaseSettings(BaseSettings):
    """The store: which PostgreSQL, the embedded server, and how long reads may take."""

    model_config = SETTINGS_CONFIG

    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "SECRAG_DATABASE_URL"),
        description="Any PostgreSQL >= 15 with pgvector >= 0.7 and pg_trgm. Unset: the embedded server.",
    )
    data_dir: Path = Field(
        default_factory=default_data_dir,
        json_schema_extra=doc_default("`.secrag` of the project"),
        description="Embedded database (`pgdata/`), Dagster home, mirrors, checkouts. The project is the nearest "
        "directory, from the working directory up, holding `.secrag/` or `dagster.yaml` and `workspace.yaml`.",
    )
    database_name: str = Field(default="secrag", description="Database created on the embedded server.")
    dagster_database_name: str = Field(
        default="secrag_dagster", description="Dagster's own database on the same server."
    )
    embedded_shared_buffers: str = Field(
        default="512MB",
        pattern=r"^\d+\s*(kB|MB|GB)$",
        description="shared_buffers of the embedded server (applied with one restart when it changes).",
    )
    sql_dir: Path = Field(
        default_factory=sql_dir,
        json_schema_extra=doc_default("the package's `secrag/sql`"),
        description="Migrations and named queries (shipped in the package).",
    )
    connect_timeout: int = Field(default=5, ge=1, le=120, description="Seconds to wait for the database.")
    reader_statement_timeout_ms: int = Field(
        default=2000, ge=100, description="Statement timeout of a request's reads (504 past it)."
    )
    reader_aggregate_timeout_ms: int = Field(
        default=60_000,
        ge=100,
        description="Statement timeout of the API's store-wide reads (the spelling vocabulary), made at start-up "
        "and refreshed in the background, never inside a request.",
    )


class UpstreamSettings(BaseSettings):
    """Where the pipeline's fetchers and probes may go, and how long and how much they may take."""

    model_config = SETTINGS_CONFIG

    upstream_mirror: Path | None = Field(
        default=None, description="Snapshot folder (like `../shared/upstream`) served as local mirrors."
    )
    github_api_base: str = Field(
        default="https://api.github.com", description="Releases API used by release-tracked sources."
    )
    github_token: str | None = Field(
        default=None,
        validation_alias=AliasChoices("GITHUB_TOKEN", "SECRAG_GITHUB_TOKEN"),
        description="Sent to the releases API only; raises its rate limit.",
    )
    http_allowed_hosts: list[str] = Field(
        default_factory=list,
        json_schema_extra=doc_default("`[]`"),
        description="JSON list of extra hosts the fetcher may contact (besides the built-in upstream hosts).",
    )
    http_allow_file: bool = Field(default=False, description="Allow file:// URLs (mirrors, tests).")
    http_max_bytes: int = Field(default=100 * 1024 * 1024, ge=1024, description="Size cap of one download.")
    probe_timeout: float = Field(default=20.0, gt=0, description="Seconds per upstream version probe.")
    fetch_timeout: float = Field(default=600.0, gt=0, description="Seconds per upstream fetch.")


class PipelineSettings(BaseSettings):
    """What a refresh refuses, how it chunks, and the user-document folders."""

    model_config = SETTINGS_CONFIG

    max_shrink: float = Field(
        default=0.5, ge=0, le=1, description="A version that shrinks a source by more is refused unless forced."
    )
    max_error_share: float = Field(
        default=0.2, ge=0, le=1, description="A source fails when more of its files than this fail to parse."
    )
    folder_max_shrink: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="A user folder whose documents would shrink by a larger share is refused unless forced (run "
        "config `force`); 1: any shrink is accepted. A folder that served documents and lists none (an unmounted "
        "mount point) is refused whatever this is.",
    )
    sentence_training: bool = Field(
        default=True,
        description="The pipeline trains the sentence model (asset models/sentence_model) whenever ATT&CK's "
        "procedure examples change: the general model fine-tuned on them, validated on held-back actors' "
        "examples and promoted only when it beats the model serving the sentence path.",
    )
    sentence_training_steps: int = Field(
        default=600,
        ge=1,
        le=100_000,
        description="Training steps of the sentence model (32 pairs each); a step's time is in docs/figures.md.",
    )
    chunk_target_chars: int = Field(
        default=1000,
        ge=200,
        description="Chunk size in characters; a Markdown heading starts a new chunk, and a source's registry "
        "entry can set its own (`chunking: {target, overlap, across}`).",
    )
    chunk_overlap_chars: int = Field(
        default=200,
        ge=0,
        description="A chunk that continues a section starts with the previous chunk's last characters "
        "(from a sentence or word start).",
    )
    chunk_across_paragraphs: bool = Field(
        default=True, description="Chunks overlap across paragraphs, not only inside long ones."
    )
    poll_interval: int | None = Field(
        default=None,
        ge=POLL_FLOOR_SECONDS,
        json_schema_extra=doc_default("each source's own (registry `poll_interval`)"),
        description="Seconds between two upstream probes of every online source, instead of each source's own "
        f"(registry default: {DEFAULT_POLL_SECONDS['commit']} for commits, {DEFAULT_POLL_SECONDS['release']} for "
        f"releases, {DEFAULT_POLL_SECONDS['feed']} for feeds); at least {POLL_FLOOR_SECONDS}. Each source's interval "
        f"is moved by up to {POLL_JITTER:.0%}, the same way on every load, so the sources do not probe together.",
    )
    change_history_days: int = Field(
        default=90,
        ge=1,
        description="Days of change history kept (GET /v1/changes: what each publish added, modified and removed), "
        "and of `unchanged` refresh attempts; the pipeline prunes older ones at each refresh (a source's last "
        "attempt stays).",
    )
    folders_file: Path | None = Field(
        default=None,
        json_schema_extra=doc_default("`folders.yaml` if present"),
        description="User-document folders (name, path, and who sees them: a tenant with optional users and "
        "groups, or public).",
    )


class ModelSettings(BaseSettings):
    """Which embedding model the pipeline embeds with, and the threads and caches it uses."""

    model_config = SETTINGS_CONFIG

    embedding_model: str = Field(
        default=DEFAULT_MODEL,
        description="The model the pipeline embeds with, an id of the model registry (`secrag/models/models.yaml` and "
        "`SECRAG_MODELS_FILE`): `all-MiniLM-L6-v2-int8` (the packaged weights exported to ONNX and quantised to "
        "int8 at first use: offline, reproducible, checksummed), `all-MiniLM-L6-v2` (fp32), or another.",
    )
    models_file: Path | None = Field(
        default=None,
        description="A YAML file of more embedding models, shaped like `secrag/models/models.yaml` (id, source, "
        "pooling, prefixes, dimensions, max tokens, normalisation); see docs/pipeline.md, Adding a model.",
    )
    models_hub_url: str = Field(
        default="https://huggingface.co",
        pattern=r"^https://[^/\s]+(/[^\s]*)?$",
        description="The hub `secrag models fetch` downloads model files from (`<url>/<repo>/resolve/<revision>/"
        "<file>`), e.g. a mirror inside the site; nothing else downloads a model.",
    )
    embedding_batch_size: int = Field(default=64, ge=1, le=1024, description="Texts embedded per batch.")
    torch_threads: int = Field(
        default=0, ge=0, description="torch threads of `SECRAG_QUERY_ENCODER=torch`; 0 = torch's default."
    )
    embedding_threads: int = Field(
        default=0, ge=0, le=64, description="onnxruntime threads embedding documents; 0 = one per core."
    )
    model_cache_dir: Path | None = Field(
        default=None,
        json_schema_extra=doc_default("`<data dir>/models`"),
        description="Where the ONNX exports of the models are kept (pipeline and API; `secrag models export` "
        "fills it, the image bakes it in), and the trained models (`trained/<id>/`, registered from there).",
    )


class SnapshotSettings(BaseSettings):
    """Store snapshots: the one a new store starts from, and whose signature it trusts."""

    model_config = SETTINGS_CONFIG

    start_from: str | None = Field(
        default=None,
        description="A snapshot file (path) or https URL `secrag run` (and a deployment's migrate step, `secrag "
        "snapshot import --once`) imports before anything else starts, once: only into a store without public "
        "documents (a fresh one); on any other store it is left aside. Unset or empty: none.",
    )
    snapshot_public_key: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9+/]{43}=$",
        description="The ed25519 public key (32 bytes, base64) whose signature a snapshot must carry to be "
        "imported; unset: a snapshot file's signature is not checked (its checksums and rows always are) and a "
        "snapshot URL is refused unless SECRAG_SNAPSHOT_UNSIGNED_URLS. Needs the `cryptography` package.",
    )
    snapshot_unsigned_urls: bool = Field(
        default=False,
        description="Accept a snapshot named by an http(s) URL without a signature. Off: a snapshot from a URL "
        "is imported only with SECRAG_SNAPSHOT_PUBLIC_KEY set (so its signature is checked); a file on this "
        "machine needs none.",
    )
    snapshot_max_bytes: int = Field(
        default=8 * 1024**3,
        ge=1024,
        description="Size cap of a snapshot: of its download from a URL, and of the bytes its parts declare "
        "(uncompressed), checked before any part is read.",
    )


class HookSettings(BaseSettings):
    """The webhook receiver (`secrag hooks`): upstreams' signed pushes that make a source's sensor look now."""

    model_config = SETTINGS_CONFIG

    hooks_enabled: bool = Field(
        default=False,
        description="Run the webhook receiver: `secrag hooks` refuses to start while this is off.",
    )
    hook_secrets: dict[str, SecretStr] = Field(
        default_factory=dict,
        json_schema_extra=doc_default("none"),
        description="Each webhook's secret, a JSON map of hook to secret: a repository's `owner/name` (its GitHub "
        "webhook pokes every source on it) or a source's name (a feed's signed POST); a hook not named here is "
        "refused (404). Never logged.",
    )
    hook_secrets_file: Path | None = Field(
        default=None,
        description="A JSON file holding the same map (a mounted secret); its entries join SECRAG_HOOK_SECRETS.",
    )
    hook_max_body_bytes: int = Field(
        default=1024 * 1024,
        ge=1024,
        le=25 * 1024 * 1024,
        description="Largest webhook body read; a larger one is refused (413) before it is read past this.",
    )
    hooks_database_url: str | None = Field(
        default=None,
        json_schema_extra=doc_default("the secrag database as `secrag_hooks`"),
        description="The receiver's login (INSERT on `pokes` and its retention only).",
    )
    hook_delivery_retention_seconds: int = Field(
        default=7 * 86400,
        ge=3600,
        le=90 * 86400,
        description="How long a hook's delivery ids are remembered, so that a replay is refused (409); an older "
        "delivery id is accepted again (it only makes a sensor look).",
    )
    hook_delivery_ids_kept: int = Field(
        default=1000,
        ge=10,
        le=1_000_000,
        description="How many of a hook's newest delivery ids are remembered at most; the oldest beyond it are "
        "forgotten when a delivery is accepted.",
    )

    def secrets(self) -> dict[str, SecretStr]:
        """Every hook's secret by its name (secrag/hook_names.py): the file's entries, then SECRAG_HOOK_SECRETS's."""
        found: dict[str, SecretStr] = {}
        if self.hook_secrets_file is not None:
            raw = json.loads(self.hook_secrets_file.read_text(encoding="utf-8"))
            if not isinstance(raw, dict) or not all(isinstance(v, str) and v for v in raw.values()):
                raise ValueError(f"{self.hook_secrets_file}: a JSON object of hooks to secrets")
            found.update({hook_name(str(k)): SecretStr(v) for k, v in raw.items()})
        found.update({hook_name(k): v for k, v in self.hook_secrets.items()})
        return found


class Settings(DatabaseSettings, UpstreamSettings, PipelineSettings, ModelSettings, SnapshotSettings, HookSettings):
    """Every knob the pipeline and the command line read from the environment, by concern (the groups
    above); docs/configuration.md's tables are generated from these models (secrag/settings_docs.py)."""

    model_config = SETTINGS_CONFIG

    @property
    def pgdata(self) -> Path:
        return (self.data_dir / "pgdata").resolve()

    @property
    def models_dir(self) -> Path:
        """Exported models (the ONNX document and query encoders); the container image bakes them in."""
        return self.model_cache_dir or self.data_dir / "models"


SETTINGS_GROUPS: tuple[type[BaseSettings], ...] = (
    DatabaseSettings,
    UpstreamSettings,
    PipelineSettings,
    ModelSettings,
    SnapshotSettings,
    HookSettings,
)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (cached; tests clear the cache to change them)."""
    return Settings()
