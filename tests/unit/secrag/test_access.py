"""The one access rule of folders.yaml and `secrag ingest`: a tenant (with users and groups) or public."""

from __future__ import annotations

import pytest

from secrag.access import NO_CHOICE, NO_TENANT, PUBLIC_AND_PRIVATE, AccessProblem, access_problem


@pytest.mark.parametrize(
    ("tenant", "users", "groups", "public", "problem"),
    [
        ("acme", (), (), False, None),
        ("acme", ("alice",), ("soc",), False, None),
        (None, (), (), True, None),
        (None, (), (), False, AccessProblem("tenant", NO_CHOICE)),
        (None, ("alice",), (), False, AccessProblem("users", NO_TENANT)),
        (None, (), ("soc",), False, AccessProblem("groups", NO_TENANT)),
        ("acme", (), (), True, AccessProblem("public", PUBLIC_AND_PRIVATE)),
        (None, ("alice",), (), True, AccessProblem("public", PUBLIC_AND_PRIVATE)),
    ],
)
def test_access_is_one_explicit_choice(
    tenant: str | None, users: tuple[str, ...], groups: tuple[str, ...], public: bool, problem: AccessProblem | None
) -> None:
    assert access_problem(tenant=tenant, users=users, groups=groups, public=public) == problem
