"""How strong a secret is: a key must be long and varied enough that guessing it is hopeless at any rate.

The estimate is the key's length times the lesser of two empirical entropies per character: of its
characters, and of the steps between neighbouring characters (so `abcdef...` and `aAbBcC...`, varied as
characters, count as the runs they are). A random key clears it with room to spare: 32 hex digits
(`openssl rand -hex 16`) estimate about 125 bits, `secrets.token_urlsafe(16)` about 100, `token_urlsafe(32)`
over 200. It cannot see a
dictionary passphrase for what it is; generate keys, do not choose them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

MIN_KEY_CHARS = 20
MIN_KEY_BITS = 80
ADVICE = "generate one, e.g. `openssl rand -hex 32` or `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"


def _entropy(symbols: Iterable[object]) -> float:
    """Shannon entropy per symbol of the symbols' own distribution (bits), with Miller and Madow's correction
    of a short sample's bias ((distinct - 1) / 2n nats): 22 random characters are 22 distinct ones at most."""
    counts = Counter(symbols)
    total = sum(counts.values())
    if not total:
        return 0.0
    plain = -sum(n / total * math.log2(n / total) for n in counts.values())
    return plain + (len(counts) - 1) / (2 * total * math.log(2))


def estimated_bits(key: str) -> float:
    """The key's estimated entropy in bits (see the module's docstring)."""
    steps = [ord(b) - ord(a) for a, b in zip(key, key[1:], strict=False)]
    return len(key) * min(_entropy(key), _entropy(steps))


def weakness(key: str) -> str | None:
    """Why the key is too weak to accept (never quoting it), or None for a strong one."""
    if len(key) < MIN_KEY_CHARS:
        return f"too short: {len(key)} characters, at least {MIN_KEY_CHARS} required; {ADVICE}"
    if estimated_bits(key) < MIN_KEY_BITS:
        return f"too predictable (repeated or sequential characters), at least {MIN_KEY_BITS} bits required; {ADVICE}"
    return None
