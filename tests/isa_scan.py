"""Which CPU features each function of an x86-64 ELF binary needs, by disassembly (iced-x86).

A binary runs on every CPU of an x86-64 level when no function uses an instruction beyond that
level, except functions the program calls only after checking the CPU at run time. Those are
recognised by the name their authors give them (`pg_popcount_avx512`, `BitHammingDistanceAvx512Popcount`,
`HalfvecL2SquaredDistanceF16c`).

    python -m tests.isa_scan DIR_OR_FILE... [--level x86-64-v3]

prints every function outside the level and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile
from iced_x86 import CpuidFeature, Decoder

from secrag import cpu

# iced-x86's feature for an instruction -> the /proc/cpuinfo flag a CPU must show to run it.
_FLAG_OF_FEATURE = {
    "CMOV": "cmov",
    "CMPXCHG8B": "cx8",
    "FXSAVE_FXRSTOR": "fxsr",
    "MMX": "mmx",
    "SYSCALL": "syscall",
    "SSE": "sse",
    "SSE2": "sse2",
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "SSE4_1": "sse4_1",
    "SSE4_2": "sse4_2",
    "POPCNT": "popcnt",
    "CMPXCHG16B": "cx16",
    "AVX": "avx",
    "AVX2": "avx2",
    "BMI1": "bmi1",
    "BMI2": "bmi2",
    "F16C": "f16c",
    "FMA": "fma",
    "LZCNT": "abm",
    "MOVBE": "movbe",
    "XSAVE": "xsave",
    "AVX512F": "avx512f",
    "AVX512BW": "avx512bw",
    "AVX512CD": "avx512cd",
    "AVX512DQ": "avx512dq",
    "AVX512VL": "avx512vl",
}
# Features every x86-64 CPU has, or instructions that run as no-ops on CPUs without them
# (CET_IBT is `endbr64`, a NOP before CET; MULTIBYTENOP is `nopl`).
_EVERYWHERE = {
    "INTEL8086",
    "INTEL186",
    "INTEL286",
    "INTEL386",
    "INTEL486",
    "X64",
    "CPUID",
    "FPU",
    "FPU287",
    "FPU387",
    "TSC",
    "PAUSE",
    "MULTIBYTENOP",
    "CET_IBT",
    "CLFSH",
    "RDTSCP",
}
# A function whose name says which extension it is for is called only after a run-time CPU check.
DISPATCHED = re.compile(r"avx512|avx2|f16c|sse4_?2|pclmul", re.IGNORECASE)

_FEATURE_NAMES = {
    value: name for name, value in vars(CpuidFeature).items() if name.isupper() and isinstance(value, int)
}


@dataclass(frozen=True)
class Finding:
    """A function that needs CPU features beyond the level."""

    binary: str
    function: str
    features: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.binary}: {self.function} uses {', '.join(self.features)}"


def features_of(code: bytes, address: int = 0) -> set[str]:
    """iced-x86's CPUID feature names of every instruction in `code`."""
    found: set[str] = set()
    for instruction in Decoder(64, code, ip=address):
        found.update(_FEATURE_NAMES[f] for f in instruction.cpuid_features())
    return found


def beyond(features: Iterable[str], level: str) -> tuple[str, ...]:
    """The features a CPU of `level` may lack (unknown features count as beyond: stay strict)."""
    allowed = cpu.level_flags(level)
    return tuple(sorted(f for f in features if f not in _EVERYWHERE and _FLAG_OF_FEATURE.get(f) not in allowed))


def scan_functions(binary: str, functions: Iterable[tuple[str, int, bytes]], level: str) -> list[Finding]:
    """Findings for (name, address, code) triples; dispatched functions are exempt."""
    findings = []
    for name, address, code in functions:
        if DISPATCHED.search(name):
            continue
        extra = beyond(features_of(code, address), level)
        if extra:
            findings.append(Finding(binary, name, extra))
    return sorted(findings, key=lambda f: f.function)


def elf_functions(path: Path) -> Iterator[tuple[str, int, bytes]]:
    """(name, address, code) of every sized function symbol in the ELF's executable sections."""
    with path.open("rb") as handle:
        elf = ELFFile(handle)
        sections = [s for s in elf.iter_sections() if s["sh_flags"] & 0x4 and s["sh_type"] == "SHT_PROGBITS"]
        blobs = [(s["sh_addr"], s.data()) for s in sections]
        seen: set[tuple[int, int]] = set()
        for table in (elf.get_section_by_name(".symtab"), elf.get_section_by_name(".dynsym")):
            if table is None:
                continue
            for symbol in table.iter_symbols():
                start, size = symbol["st_value"], symbol["st_size"]
                if symbol["st_info"]["type"] != "STT_FUNC" or not start or not size or (start, size) in seen:
                    continue
                seen.add((start, size))
                for base, data in blobs:
                    if base <= start and start + size <= base + len(data):
                        yield symbol.name, start, data[start - base : start - base + size]
                        break


def is_elf(path: Path) -> bool:
    """A regular file (not a link) that starts with the ELF magic."""
    if path.is_symlink() or not path.is_file():
        return False
    with path.open("rb") as handle:
        return handle.read(4) == b"\x7fELF"


def elf_files(roots: Iterable[Path]) -> list[Path]:
    """Every ELF file under the roots (or the roots themselves)."""
    found: list[Path] = []
    for root in roots:
        candidates = [root] if root.is_file() else sorted(root.rglob("*"))
        found.extend(p for p in candidates if is_elf(p))
    return found


def scan(files: Iterable[Path], level: str) -> list[Finding]:
    """Findings over ELF files (see elf_files)."""
    findings: list[Finding] = []
    for path in files:
        findings.extend(scan_functions(path.name, elf_functions(path), level))
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--level", default="x86-64-v3", choices=cpu.LEVELS)
    args = parser.parse_args(argv)
    files = elf_files(args.paths)
    findings = scan(files, args.level)
    for finding in findings:
        print(finding)  # noqa: T201 - a command-line report
    print(f"{len(files)} ELF files, {len(findings)} functions beyond {args.level}")  # noqa: T201
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
