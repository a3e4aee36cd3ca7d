"""The model ids and texts the ONNX tests encode."""

from __future__ import annotations

MODEL = "all-MiniLM-L6-v2"
INT8 = "all-MiniLM-L6-v2-int8"
LONG = " ".join(f"Step {i}: the adversary dumps LSASS memory with procdump.exe and exfiltrates it." for i in range(40))
QUERIES = [
    "T1003",
    "mimikatz",
    "lsass memory dump",
    "how do attackers abuse rundll32 to proxy execution of code",
    "CVE-2021-44228 log4j JNDI lookup",
    LONG,
]
