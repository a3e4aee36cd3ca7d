"""Webhook signatures (GitHub's sha256= form) and where the receiver's secrets come from."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

import pytest

from secrag.settings import Settings
from serving.hooks.signatures import Verdict, sign, verify

BODY = b'{"ref":"refs/heads/master"}'


def test_a_signature_is_github_s_hmac_sha256_of_the_body() -> None:
    # GitHub's documented example: secret "It's a Secret to Everybody", payload "Hello, World!"
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert sign(b"It's a Secret to Everybody", b"Hello, World!") == expected
    assert sign(b"k", BODY) == "sha256=" + hmac.new(b"k", BODY, hashlib.sha256).hexdigest()


@pytest.mark.parametrize(
    ("header", "verdict"),
    [
        (sign(b"k", BODY), Verdict.SIGNED),
        (None, Verdict.UNSIGNED),
        ("", Verdict.UNSIGNED),
        (sign(b"other", BODY), Verdict.FORGED),
        (sign(b"k", BODY + b"\n"), Verdict.FORGED),
        (sign(b"k", BODY).upper(), Verdict.FORGED),
        ("sha1=" + hmac.new(b"k", BODY, hashlib.sha1).hexdigest(), Verdict.FORGED),
        ("sha256=", Verdict.FORGED),
    ],
)
def test_verify(header: str | None, verdict: Verdict) -> None:
    assert verify(b"k", BODY, header) is verdict


def test_secrets_come_from_the_map_and_the_file_and_are_never_shown(tmp_path: Path) -> None:
    file = tmp_path / "secrets.json"
    file.write_text(json.dumps({"sigmahq/sigma": "from-file", "cisa_kev": "kev"}), encoding="utf-8")
    settings = Settings(_env_file=None, hook_secrets={"SigmaHQ/sigma": "from-env"}, hook_secrets_file=file)  # type: ignore[call-arg]
    found = settings.secrets()
    assert {k: v.get_secret_value() for k, v in found.items()} == {"sigmahq/sigma": "from-env", "cisa_kev": "kev"}
    assert "from-env" not in repr(settings) and "from-env" not in str(found)
    assert settings.hooks_enabled is False  # off by default


def test_a_secrets_file_that_is_not_a_map_of_secrets_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "secrets.json"
    file.write_text(json.dumps({"sigma": ""}), encoding="utf-8")
    with pytest.raises(ValueError, match="hooks to secrets"):
        Settings(_env_file=None, hook_secrets_file=file).secrets()  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="names no webhook"):
        Settings(_env_file=None, hook_secrets={"SigmaHQ/sigma/rules": "s"}).secrets()  # type: ignore[call-arg]
