"""API keys mapped to a tenant, a user and groups (YAML file); anonymous callers see public documents."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from secrag.errors import ConfigError
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


def load_api_keys(path: Path | None) -> ApiKeys:
    """Entries: `{key: ..., or key_sha256: ..., tenant: ..., user: ..., groups: [...]}` under `keys:`."""
    if path is None:
        return ApiKeys({})
    if not path.exists():
        raise ConfigError(f"API keys file {path.name} does not exist", hint="fix SECRAG_API_KEYS_FILE")
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    entries = raw.get("keys") if isinstance(raw, Mapping) else None
    if not isinstance(entries, list):
        raise ConfigError(f"{path.name}: expected a `keys:` list")
    out: dict[str, Principal] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or not entry.get("tenant"):
            raise ConfigError(f"{path.name}: key #{i + 1} needs a tenant")
        if entry.get("key_sha256"):
            digest = str(entry["key_sha256"]).lower()
        elif entry.get("key"):
            digest = hashlib.sha256(str(entry["key"]).encode("utf-8")).hexdigest()
        else:
            raise ConfigError(f"{path.name}: key #{i + 1} needs `key` or `key_sha256`")
        out[digest] = Principal(
            tenant=str(entry["tenant"]),
            user=str(entry["user"]) if entry.get("user") else None,
            groups=tuple(str(g) for g in entry.get("groups") or ()),
        )
    return ApiKeys(out)
