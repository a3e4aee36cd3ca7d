"""API keys: a key file's plain keys must be long and varied enough, refused at start-up with the file and the
line, never quoting the key (serving/access/keys.py, serving/access/key_strength.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from secrag.errors import ConfigError
from serving.access.key_strength import MIN_KEY_BITS, estimated_bits, weakness
from serving.access.keys import Principal, load_api_keys

STRONG = "f3b9c1d07a6e4b2d9c8e1f5a7b3d6c0e"  # 32 hex digits, as `openssl rand -hex 16` writes them


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("Z", "too short"),
        ("alice-key", "too short"),
        ("a" * 40, "too predictable"),
        ("abcdefghijklmnopqrstuvwxyz", "too predictable"),  # varied characters, one step
        ("aAbBcCdDeEfFgGhHiIjJkKlL", "too predictable"),
        ("0123456789abcdef0123456789abcdef", "too predictable"),
        ("passwordpasswordpassword", "too predictable"),
    ],
)
def test_short_or_predictable_keys_are_weak(key: str, why: str) -> None:
    reason = weakness(key)
    assert reason is not None and reason.startswith(why) and key not in reason


@pytest.mark.parametrize(
    "key",
    [
        STRONG,
        "Zq7_xK2mP9vR4wT8yB1nC5hJ",  # 24 random url-safe characters
        "kD3vQ8sL1xN6zR0pW4tY7uJ2aF5hB9cM3eG8iK1oE",
    ],
)
def test_random_keys_are_strong(key: str) -> None:
    assert weakness(key) is None and estimated_bits(key) >= MIN_KEY_BITS


def test_a_weak_key_is_refused_at_start_up_naming_the_file_and_line_but_not_the_key(tmp_path: Path) -> None:
    path = tmp_path / "keys.yaml"
    path.write_text(
        f"keys:\n  - {{key: {STRONG}, tenant: acme}}\n  - {{key: hunter2, tenant: globex, user: gina}}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_api_keys(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:3: keys[1].key: too short: 7 characters, at least 20 required")
    assert "hunter2" not in message


def test_strong_keys_and_digests_load(tmp_path: Path) -> None:
    path = tmp_path / "keys.yaml"
    digest = hashlib.sha256(b"any key: its strength cannot be read from its digest").hexdigest()
    path.write_text(f"keys:\n  - {{key: {STRONG}, tenant: acme}}\n  - {{key_sha256: {digest}, tenant: t}}\n")
    keys = load_api_keys(path)
    assert keys.resolve(STRONG) == Principal("acme")
    assert keys.resolve("any key: its strength cannot be read from its digest") == Principal("t")
