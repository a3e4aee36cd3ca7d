"""API keys mapped to a tenant, a user and groups (YAML file); anonymous callers see public documents."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from secrag.errors import ConfigError
from secrag.files.config_files import ConfigModel, load_model
from serving.access.key_strength import weakness
from serving.contract.errors import UnknownApiKey


@dataclass(frozen=True)
class Principal:
    """Who is asking: tenant None sees only public documents (tenant IS NULL)."""

    tenant: str | None = None
    user: str | None = None
    groups: tuple[str, ...] = ()

    def params(self) -> dict[str, object]:
        """The ACL parameters every document query binds."""
        return {"tenant": self.tenant, "user": self.user, "groups": list(self.groups)}


ANONYMOUS = Principal()


@dataclass(frozen=True)
class ApiKeys:
    """sha256(key) -> principal; keys are compared by digest in constant time."""

    by_digest: Mapping[str, Principal]

    def resolve(self, key: str | None) -> Principal:
        if not key:
            return ANONYMOUS
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
        for known, principal in self.by_digest.items():
            if hmac.compare_digest(known, digest):
                return principal
        raise UnknownApiKey


class KeyEntry(ConfigModel):
    """One key: the key itself (long and random enough: serving/access/key_strength.py) or its sha256 (hex),
    and the principal it stands for."""

    key: str | None = Field(default=None, min_length=1)
    key_sha256: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{64}$")
    tenant: str = Field(min_length=1)
    user: str | None = None
    groups: list[str] = []

    @field_validator("key")
    @classmethod
    def _strong(cls, key: str | None) -> str | None:
        why = None if key is None else weakness(key)
        if why is not None:
            raise ValueError(why)  # the message never quotes the key
        return key

    @model_validator(mode="after")
    def _one_key(self) -> KeyEntry:
        if (self.key is None) == (self.key_sha256 is None):
            raise ValueError("needs exactly one of `key` or `key_sha256`")
        return self

    def digest(self) -> str:
        if self.key_sha256 is not None:
            return self.key_sha256.lower()
        return hashlib.sha256(str(self.key).encode("utf-8")).hexdigest()


class KeysFile(ConfigModel):
    """The API keys file: `keys:` a list of entries."""

    keys: list[KeyEntry]


def load_api_keys(path: Path | None) -> ApiKeys:
    """Entries: `{key: ..., or key_sha256: ..., tenant: ..., user: ..., groups: [...]}` under `keys:`;
    a ConfigError names the file, the line and the field."""
    if path is None:
        return ApiKeys({})
    if not path.exists():
        raise ConfigError(f"API keys file {path.name} does not exist", hint="fix SECRAG_API_KEYS_FILE")
    entries = load_model(path, KeysFile).keys
    return ApiKeys(
        {entry.digest(): Principal(entry.tenant, entry.user or None, tuple(entry.groups)) for entry in entries}
    )
