"""What this CPU can run: x86-64 micro-architecture levels as /proc/cpuinfo flags."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# The x86-64 psABI levels, each adding to the one before, named by the flags Linux shows in
# /proc/cpuinfo (LZCNT is "abm"; SSE3 is "pni"; OSXSAVE is implied by a kernel that shows "avx").
_LEVEL_ADDS: dict[str, tuple[str, ...]] = {
    "x86-64": ("cmov", "cx8", "fpu", "fxsr", "mmx", "syscall", "sse", "sse2"),
    "x86-64-v2": ("cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"),
    "x86-64-v3": ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"),
    "x86-64-v4": ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"),
}
LEVELS: tuple[str, ...] = tuple(_LEVEL_ADDS)


def level_flags(level: str) -> frozenset[str]:
    """Every /proc/cpuinfo flag a CPU of `level` has."""
    if level not in _LEVEL_ADDS:
        raise ValueError(f"unknown x86-64 level {level!r}; one of {', '.join(LEVELS)}")
    flags: set[str] = set()
    for name in LEVELS[: LEVELS.index(level) + 1]:
        flags.update(_LEVEL_ADDS[name])
    return frozenset(flags)


@dataclass(frozen=True)
class CpuInfo:
    """The first processor's model name and flags, as the kernel reports them."""

    model: str
    flags: frozenset[str]

    def missing(self, level: str) -> list[str]:
        """Flags of `level` this CPU lacks, sorted (empty: it runs code built for that level)."""
        return sorted(level_flags(level) - self.flags)

    def level(self) -> str | None:
        """The highest x86-64 level this CPU meets, None below the baseline."""
        met = [name for name in LEVELS if not self.missing(name)]
        return met[-1] if met else None


def parse_cpuinfo(text: str) -> CpuInfo:
    """The first processor block of a /proc/cpuinfo text."""
    model, flags = "", ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not model:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = value
        if not line.strip() and (model or flags):
            break
    return CpuInfo(model=model or "unknown", flags=frozenset(flags.split()))


@cache
def read_cpuinfo(path: Path = Path("/proc/cpuinfo")) -> CpuInfo | None:
    """This machine's CPU on x86-64 Linux; None elsewhere (other architectures have no levels)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    try:
        return parse_cpuinfo(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
