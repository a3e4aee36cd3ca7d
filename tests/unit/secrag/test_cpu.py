"""CPU levels read from /proc/cpuinfo text."""

from __future__ import annotations

import pytest

from secrag import cpu

_BASE = "fpu cx8 cmov mmx fxsr sse sse2 syscall lm"
_V2 = _BASE + " pni ssse3 cx16 sse4_1 sse4_2 popcnt lahf_lm"
_V3 = _V2 + " avx avx2 fma f16c bmi1 bmi2 abm movbe xsave"
_V4 = _V3 + " avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni"


def _cpuinfo(model: str, flags: str) -> str:
    block = f"processor\t: 0\nvendor_id\t: X\nmodel name\t: {model}\nflags\t\t: {flags}\n\n"
    return block + block.replace("processor\t: 0", "processor\t: 1")


@pytest.mark.parametrize(
    ("flags", "level"),
    [
        (_BASE, "x86-64"),
        (_V2, "x86-64-v2"),
        (_V3, "x86-64-v3"),
        (_V4, "x86-64-v4"),
        ("fpu", None),
    ],
)
def test_level_is_the_highest_one_met(flags: str, level: str | None) -> None:
    assert cpu.parse_cpuinfo(_cpuinfo("Some CPU", flags)).level() == level


def test_an_avx2_cpu_without_avx512_misses_only_the_v4_flags() -> None:
    info = cpu.parse_cpuinfo(_cpuinfo("AMD EPYC", _V3))
    assert info.model == "AMD EPYC"
    assert info.missing("x86-64-v3") == []
    assert info.missing("x86-64-v4") == ["avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl"]


def test_an_avx_only_cpu_misses_avx2_and_friends() -> None:
    sandy_bridge = _V2 + " avx xsave"
    info = cpu.parse_cpuinfo(_cpuinfo("Intel(R) Xeon(R) CPU E5-2670", sandy_bridge))
    assert info.missing("x86-64-v3") == ["abm", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe"]


def test_unknown_level_is_an_error() -> None:
    with pytest.raises(ValueError, match="x86-64-v3"):
        cpu.level_flags("x86-64-v9")


def test_this_machine_reads() -> None:
    info = cpu.read_cpuinfo()
    if info is not None:  # x86-64 Linux: a real model and a real level
        assert info.model and info.level() is not None
