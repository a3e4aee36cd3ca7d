"""Who sees a user document: the one rule of `folders.yaml` and `secrag ingest`, which fails closed.

A user document is either a tenant's (optionally narrowed to some of its users and groups) or public,
and the writer says which: users or groups without a tenant used to publish as public, so nothing is
left to a default. The database holds the same rule as a CHECK (migration 0018).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

AccessField = Literal["tenant", "users", "groups", "public"]

NO_TENANT = "users and groups need a tenant (they are that tenant's users and groups)"
NO_CHOICE = "say who sees these documents: a tenant (optionally with users and groups), or public"
PUBLIC_AND_PRIVATE = "public documents take no tenant, users or groups; choose one"


@dataclass(frozen=True)
class AccessProblem:
    """Which field is wrong and why; each entry point names the field its own way (YAML key, CLI option)."""

    field: AccessField
    message: str


def access_problem(
    *, tenant: str | None, users: Sequence[str], groups: Sequence[str], public: bool
) -> AccessProblem | None:
    """None when the access is one clear choice; else the first problem."""
    if public:
        if tenant is not None or users or groups:
            return AccessProblem("public", PUBLIC_AND_PRIVATE)
        return None
    if tenant is None:
        if users or groups:
            return AccessProblem("users" if users else "groups", NO_TENANT)
        return AccessProblem("tenant", NO_CHOICE)
    return None
