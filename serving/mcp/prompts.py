"""MCP prompts for the common workflows: map a report to techniques, triage an artefact, check coverage
for a group (as a Navigator layer, against a layer of your rules if given). Each names the tools to call; the
triage prompt names `lookup` only on a server that has it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from serving.mcp.server import SecragMCP

Report = Annotated[str, Field(description="The report's text (or its relevant part).")]
Artefact = Annotated[
    str, Field(description="The artefact: a hash, a file or binary name, a path, a command line, a domain, ...")
]
Group = Annotated[
    str, Field(description="An ATT&CK group, software or campaign: its id (G0016) or a name or alias (APT29).")
]
MyLayer = Annotated[
    str,
    Field(
        description="Optional: an ATT&CK Navigator layer (JSON, format 4.5 or 4.4) of your own rules' techniques; "
        "the group's techniques none of them detect are then worked out."
    ),
]
SeenIn = Annotated[str, Field(description="Optional: where it was seen (host, process tree, alert).")]

BUDGET_NOTE = (
    "Pass max_chars (e.g. 4000) to any tool to bound its answer; a `budget` field then says what was cut, "
    "and you can ask again for the rest."
)


def add_prompts(server: SecragMCP) -> None:
    def has_tool(name: str) -> bool:
        return server._tool_manager.get_tool(name) is not None  # noqa: SLF001 - the tools this server serves

    @server.prompt(name="map_report", title="Map a report to ATT&CK techniques")
    def map_report(report: Report) -> str:
        """Map a threat report to ATT&CK techniques with the `map` tool, each with the sentences behind it."""
        return (
            "Map the threat report below to MITRE ATT&CK techniques.\n"
            "1. Call the `map` tool with the whole report as `text` (layer=false unless a Navigator layer is "
            "wanted). It returns techniques best first, each with its score, the supporting sentences (offsets "
            "into the text) and the passages behind it.\n"
            "2. List each technique as `T#### name (score)` with the sentence that supports it; leave out those "
            "whose sentences do not really describe the behaviour.\n"
            "3. If asked what is covered, call `coverage` with the technique ids.\n"
            f"{BUDGET_NOTE}\n\nReport:\n<<<\n{report}\n>>>"
        )

    @server.prompt(name="triage_artefact", title="Triage an artefact")
    def triage_artefact(artefact: Artefact, seen_in: SeenIn = "") -> str:
        """Triage an artefact (hash, file name, path, command line) against the store's knowledge."""
        if has_tool("lookup"):
            first = (
                "1. Call `lookup` with the exact value (hashes, binary and DLL names, paths are indexed "
                "identifiers: LOLDrivers, LOLBAS, GTFOBins, HijackLibs); the matching field is named.\n"
                "2. Then call `search` with mode=fts for the value and with the default hybrid mode for what it "
                "does, to find the techniques, detections and tests around it.\n"
            )
        else:
            first = (
                "1. Call `search` with mode=fts and the exact value (a hash, a binary or DLL name, a path) to find "
                "the records that hold it (LOLDrivers, LOLBAS, GTFOBins, HijackLibs, Sigma, ...); `exact` marks an "
                "identifier match.\n"
                "2. Then call `search` in the default hybrid mode for what it does, to find the techniques, "
                "detections and tests around it.\n"
            )
        seen = f"\nWhere it was seen: {seen_in}" if seen_in else ""
        return (
            "Triage the artefact below.\n"
            f"{first}"
            "3. Read the most relevant records in full with `get_documents`.\n"
            "4. Answer: what it is, whether it is known-bad, abused or benign, the ATT&CK techniques involved, the "
            "detections that would fire, and what to check next; cite the doc_ids.\n"
            f"{BUDGET_NOTE}\n\nArtefact: {artefact}{seen}"
        )

    @server.prompt(name="coverage_for_group", title="Check coverage for a group")
    def coverage_for_group(group: Group, my_layer: MyLayer = "") -> str:
        """A group's techniques as a Navigator layer, what the store covers of them, and the gaps (with
        `coverage`, and `compare_layers` against a layer of your own rules when you give one)."""
        if my_layer.strip():
            mine = (
                "3. Call `compare_layers` with left = the `layer` of that answer, right = the layer below (your "
                "rules), operation=minus (add right_min_score=1 if the layer lists undetected techniques with score "
                "0): the result is the group's techniques none of your rules detect, each with a comment saying "
                "where it came from. Its `right` report lists the layer's techniques ATT&CK no longer has "
                "(unknown, revoked, deprecated): name them, they need new ids.\n"
            )
            given = f"\n\nMy rules' layer:\n<<<\n{my_layer}\n>>>"
        else:
            mine = (
                "3. If the user has a Navigator layer of their own rules, call `compare_layers` with left = the "
                "`layer` of that answer, right = their layer, operation=minus: the group's techniques none of their "
                "rules detect. Without one, the store's gaps stand for it.\n"
            )
            given = ""
        return (
            f"Check what we cover against the techniques of {group}.\n"
            "1. `coverage` takes the ATT&CK id (G####, S#### or C####): if you only have a name or alias, find the "
            "id first with `search` (mode=fts, the name) among the mitre_attack results.\n"
            "2. Call `coverage` with actor=<the id> and layer=true: the group's techniques with, per technique, the "
            "counts and first items of detections (per rule set), tests and countermeasures, the gaps, and "
            "`layer`: the group's techniques as an ATT&CK Navigator layer scored by coverage (0-3). Pass limit=200, "
            "top=1 and max_chars=400000 so that one answer holds every technique and its layer; if it says "
            "truncated=true, call again with cursor=<its next_cursor> for the rest.\n"
            f"{mine}"
            "4. Summarise: how many techniques have a detection, the techniques with no detection (first those with "
            "a test but no detection: the test can validate a new rule), and those with a detection but no test; "
            "offer the layer (JSON) for the ATT&CK Navigator.\n"
            "5. For the most important gaps, call `search` for detections or tests of that technique.\n"
            f"{BUDGET_NOTE}\n\nGroup: {group}{given}"
        )
