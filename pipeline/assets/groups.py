"""What each asset group of the graph holds, for a data engineer reading the Dagster UI (Dagster has no
description of its own for a group: the code location's metadata shows this table)."""

from __future__ import annotations

from collections.abc import Iterable

# A source's three assets (its upstream, its published documents, their vectors) are in its registry
# category's group (pipeline/sources/registry/*.yaml `category`).
ASSET_GROUPS: dict[str, str] = {
    "technique": "ATT&CK (Enterprise, Mobile, ICS, their procedure examples and detection strategies) and the "
    "knowledge bases mapped to it: CAPEC, MBC, ATLAS, D3FEND, Engage. Each source: upstream, documents, vectors.",
    "detection": "Detection rules and analytics (Sigma, Elastic, Splunk, Chainsaw, Hayabusa, CAR), each rule "
    "one document with the techniques it names. Each source: upstream, documents, vectors.",
    "forensic": "Forensic artifact definitions and collection targets (ForensicArtifacts, KAPE, Velociraptor) "
    "and the bundled clarifications. Each source: upstream, documents, vectors.",
    "lolbin": "Binaries, scripts and drivers attackers live off (LOLBAS, GTFOBins, HijackLibs, LOLDrivers). "
    "Each source: upstream, documents, vectors.",
    "schema": "Telemetry schemas: OSSEM's data dictionaries and Elastic Common Schema field sets, read by the "
    "API's telemetry answers. Each source: upstream, documents, vectors.",
    "test": "Attack simulations to test detections with (Atomic Red Team, Stratus Red Team). Each source: "
    "upstream, documents, vectors.",
    "vulnerability": "Known exploited vulnerabilities (CISA KEV) with their CVE ids. Each source: upstream, "
    "documents, vectors.",
    "lookups": "The ATT&CK technique lookup (id to name, tactics, platforms, parent, redirects, domain) that "
    "every publish and the API resolve technique ids with.",
    "user_folders": "Your own folders of documents (folders.yaml, each with its tenant or public) and the "
    "one-time documents of `secrag ingest`: their documents and vectors.",
    "models": "The sentence model: the embedding model fine-tuned on ATT&CK's procedure examples, promoted only "
    "when it beats the served model on held-back actors.",
}


def groups_table(names: Iterable[str]) -> str:
    """The markdown table of these groups and what each holds (every name must be described above)."""
    rows = [f"| `{name}` | {ASSET_GROUPS[name]} |" for name in sorted(set(names))]
    return "\n".join(["| Group | What it holds |", "| --- | --- |", *rows])
