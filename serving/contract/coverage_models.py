"""Request and response models of POST /v1/coverage: per ATT&CK technique, what the store holds of each kind
(detections, tests, countermeasures, the caller's own notes), the gaps, and a Navigator layer of it."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.config import JsonDict

from serving.contract.layer_models import LayerIn, LayerReport
from serving.contract.navigator_layer import NavigatorLayer
from serving.contract.requests import (
    AttackDomain,
    PlatformName,
    SBool,
    SInt,
    Strict,
    TechniqueId,
    canonical_platforms,
)

# Hard caps of the request model (no configuration widens them).
MAX_COVERAGE_TECHNIQUES = 200
MAX_COVERAGE_TOP = 10
DEFAULT_TOP = 3
DEFAULT_COVERAGE_LIMIT = 50  # techniques per answer unless `limit` says otherwise
ACTOR_PATTERN = r"^[GgSsCc]\d{4}$"
TACTIC_PATTERN = r"^[A-Za-z][A-Za-z _-]{1,39}$"
Kind = Literal["detections", "tests", "countermeasures", "notes"]


def _only(present: str, absent: tuple[str, ...]) -> JsonDict:
    """The schema of a body giving `present` (not null) and none of `absent`."""
    return {
        "required": [present],
        "properties": {present: {"not": {"type": "null"}}},
        "not": {"anyOf": [{"required": [name]} for name in absent]},
    }


class CoverageRequest(Strict):
    # The one-input rule of `_one_input` in the schema too, so a client (or a schema-driven test) knows it.
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                _only("techniques", ("actor", "tactic", "technique_layer")),
                _only("actor", ("techniques", "tactic", "technique_layer")),
                _only("tactic", ("techniques", "actor", "technique_layer")),
                _only("technique_layer", ("techniques", "actor", "tactic")),
            ]
        }
    )

    techniques: list[TechniqueId] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_COVERAGE_TECHNIQUES,
        description="ATT&CK technique ids (T#### or T####.###). Give one of `techniques`, `actor` and `tactic`.",
    )
    actor: Annotated[str, Field(pattern=ACTOR_PATTERN)] | None = Field(
        default=None,
        description="An ATT&CK group (G####), software (S####) or campaign (C####): its techniques are those its "
        "ATT&CK procedure examples and its ATT&CK document name. Give one of `techniques`, `actor` and `tactic`.",
    )
    tactic: Annotated[str, Field(pattern=TACTIC_PATTERN)] | None = Field(
        default=None,
        description="An ATT&CK tactic, by short name (credential-access) or name (Credential Access): its active "
        "techniques, narrowed by `platforms`. Give one of `techniques`, `actor` and `tactic`.",
    )
    technique_layer: LayerIn | None = Field(
        default=None,
        description="An ATT&CK Navigator layer (format 4.5 or 4.4, as the Navigator saves it): its enabled "
        "techniques that the store's ATT&CK has are asked (the others are listed in `technique_layer`'s report); "
        "at most this deployment's layer_max_techniques entries. Give one of `techniques`, `actor`, `tactic` and "
        "`technique_layer`.",
    )
    platforms: list[PlatformName] | None = Field(
        default=None,
        min_length=1,
        max_length=50,
        description="With `tactic`: the techniques whose ATT&CK document names one of these platforms (names or "
        "common aliases, in any case). With any input: the ATT&CK analytics listed are those for these platforms.",
    )
    domain: AttackDomain = Field(
        default="enterprise",
        description="The ATT&CK domain (enterprise, mobile or ics) an `actor` or a `tactic` is read in: the "
        "group's, software's or campaign's techniques in that domain, the tactic of that domain (Mobile and "
        "Enterprise share tactic names), its mitigations as countermeasures. Technique ids name their domain "
        "themselves (each technique's `domain` says it).",
    )
    fold_subtechniques: SBool = Field(
        default=False,
        description="Fold sub-techniques into their parents: T1003.001 is asked as T1003, and a parent counts "
        "the documents labelled with any of its sub-techniques (each document once).",
    )
    top: SInt = Field(
        default=DEFAULT_TOP,
        ge=1,
        le=MAX_COVERAGE_TOP,
        description="Items listed per list of a technique: per kind, of its telemetry and of its analytics per "
        "platform (each list's count says how many there are).",
    )
    limit: SInt = Field(
        default=DEFAULT_COVERAGE_LIMIT,
        ge=1,
        le=MAX_COVERAGE_TECHNIQUES,
        description="Techniques per answer (a page): the asked techniques come in technique order, `limit` at a "
        "time (fewer when they would pass the answer's size bound), and `next_cursor` asks for the next ones.",
    )
    cursor: TechniqueId | None = Field(
        default=None,
        description="The `next_cursor` of the previous answer, with the same request otherwise: the techniques after "
        "it.",
    )
    layer: SBool = Field(default=True, description="Also return the ATT&CK Navigator layer of the coverage.")
    analytics: SBool = Field(
        default=False,
        description="Also list ATT&CK's analytics of each technique per platform, the log sources they need and "
        "what the store holds for each (the `analytics` of a technique, `log_sources`, and two gaps). Off by "
        "default: a group's answer doubles in size with them.",
    )

    @field_validator("techniques")
    @classmethod
    def _upper(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else list(dict.fromkeys(t.upper() for t in value))

    @field_validator("actor")
    @classmethod
    def _actor(cls, value: str | None) -> str | None:
        return None if value is None else value.upper()

    @field_validator("tactic")
    @classmethod
    def _tactic(cls, value: str | None) -> str | None:
        return None if value is None else "-".join(value.lower().replace("_", " ").replace("-", " ").split())

    @field_validator("platforms")
    @classmethod
    def _platforms(cls, value: list[str] | None) -> list[str] | None:
        return canonical_platforms(value)

    @model_validator(mode="after")
    def _one_input(self) -> Self:
        if sum(v is not None for v in (self.techniques, self.actor, self.tactic, self.technique_layer)) != 1:
            raise ValueError("give one of techniques, actor, tactic and technique_layer")
        return self


class CoverageItem(BaseModel):
    doc_id: str
    title: str
    source: str


class KindCoverage(BaseModel):
    count: int = Field(description="Documents of this kind labelled with the technique that the caller may see.")
    by_source: dict[str, int] = Field(description="The count per source (for detections: per rule set).")
    top: list[CoverageItem] = Field(description="The first `top` of them, by title then doc_id.")


class TelemetryNeed(BaseModel):
    logsource: dict[str, str] = Field(
        description="A Sigma logsource (its product, category and service) that detections of the technique read."
    )
    detections: int = Field(description="How many of the technique's detections read it.")
    schemas: list[str] = Field(
        description="Doc ids of the telemetry schemas that describe it (OSSEM data-dictionary events, ECS field "
        "sets; the table plans use, serving/plans/telemetry.yaml); empty when the table has none."
    )


class LogSourceRef(BaseModel):
    name: str = Field(description="ATT&CK's log-source name (WinEventLog:Sysmon, auditd:SYSCALL, AWS:CloudTrail).")
    channel: str | None = Field(default=None, description="Its channel as ATT&CK writes it (EventCode=1, execve).")
    data_component: str | None = Field(default=None, description="The ATT&CK data component it belongs to.")


class AnalyticNeed(BaseModel):
    analytic_id: str = Field(description="The ATT&CK analytic (AN####).")
    doc_id: str = Field(description="Its document (GET /v1/docs/{doc_id}).")
    strategy: str | None = Field(default=None, description="Its detection strategy (DET####).")
    log_sources: list[LogSourceRef] = Field(description="The log sources it needs (details in `log_sources`).")
    schema_held: bool = Field(
        description="Whether a telemetry schema the store holds describes at least one of its log sources."
    )


class PlatformAnalytics(BaseModel):
    platform: str = Field(description="ATT&CK's platform name (Windows, Linux, macOS, IaaS, ...).")
    count: int = Field(description="The technique's analytics for this platform.")
    analytics: list[AnalyticNeed] = Field(description="The first `top` of them, by id.")


class SigmaHeld(BaseModel):
    logsource: dict[str, str] = Field(description="A Sigma logsource (product, category, service).")
    rules: dict[str, int] = Field(description="The store's rules with this logsource, per source (sigma, hayabusa).")


class IndexHeld(BaseModel):
    index: str = Field(description="An Elastic index pattern prefix (logs-windows.sysmon_operational).")
    rules: int = Field(description="The store's Elastic rules reading an index that starts with it.")


class DataSourceHeld(BaseModel):
    data_source: str = Field(description="A Splunk data source (Sysmon EventID 1).")
    rules: int = Field(description="The store's Splunk detections naming it.")


class SchemaHeld(BaseModel):
    doc_id: str = Field(description="A telemetry schema's doc id (an OSSEM data-dictionary event, an ECS field set).")
    held: bool = Field(description="Whether the store holds it.")


class LogSourceCoverage(BaseModel):
    name: str
    channel: str | None = None
    data_component: str | None = None
    analytics: int = Field(description="How many of the answer's analytics need it.")
    resolved: bool = Field(description="Whether the shipped mapping table knows it (else the lists are empty).")
    sigma: list[SigmaHeld] = Field(default_factory=list)
    elastic: list[IndexHeld] = Field(default_factory=list)
    splunk: list[DataSourceHeld] = Field(default_factory=list)
    event_categories: list[str] = Field(default_factory=list, description="ECS `event.category` values.")
    schemas: list[SchemaHeld] = Field(default_factory=list)
    rules_held: bool = Field(
        description="Whether the store holds a rule reading one of its Sigma logsources, "
        "Elastic indices or Splunk data sources."
    )
    schema_held: bool = Field(description="Whether the store holds one of its schemas.")


class TechniqueCoverage(BaseModel):
    technique_id: str
    name: str | None = Field(description="The technique's full name; null for an id the store does not know.")
    domain: AttackDomain | None = Field(
        default=None, description="Its ATT&CK domain; null for an id the store does not know."
    )
    detections: KindCoverage
    tests: KindCoverage
    countermeasures: KindCoverage
    notes: KindCoverage = Field(description="The caller's own folder documents labelled with the technique.")
    telemetry: list[TelemetryNeed] = Field(
        description="The first `top` log sources its detections read (Sigma rules state theirs), most read first."
    )
    telemetry_count: int = Field(default=0, description="How many log sources its detections read.")
    analytics: list[PlatformAnalytics] | None = Field(
        default=None,
        description="ATT&CK's analytics of the technique per platform (narrowed by `platforms`), with the log "
        "sources each needs; null when not asked.",
    )


class CoverageGaps(BaseModel):
    no_detection: list[str] = Field(description="Techniques with no detection.")
    test_no_detection: list[str] = Field(description="Techniques with a test but no detection.")
    detection_no_test: list[str] = Field(description="Techniques with a detection but no test.")
    analytic_no_detection: list[str] = Field(
        default_factory=list,
        description="Techniques with an ATT&CK analytic (for the asked platforms, if any) but no detection.",
    )
    analytic_no_schema: list[str] = Field(
        default_factory=list,
        description="ATT&CK analytics (AN ids) none of whose log sources a schema the store holds describes.",
    )


class CoverageResponse(BaseModel):
    techniques: list[TechniqueCoverage] = Field(
        description="This page of the asked techniques, in technique order (T1003, T1003.001, T1005)."
    )
    total: int = Field(description="The techniques asked, on every page.")
    truncated: bool = Field(description="Whether techniques are left for later pages (`next_cursor` asks for them).")
    next_cursor: str | None = Field(
        description="Pass as `cursor`, with the same request, for the techniques after this page; null on the last."
    )
    gaps: CoverageGaps = Field(description="The gaps among this page's techniques.")
    actor: str | None = Field(default=None, description="The group, software or campaign asked, if any.")
    tactic: str | None = Field(default=None, description="The tactic asked (short name), if any.")
    layer: NavigatorLayer | None = Field(
        default=None, description="The ATT&CK Navigator layer (format 4.5) of the coverage; null when not asked."
    )
    log_sources: list[LogSourceCoverage] | None = Field(
        default=None,
        description="Each log source the analytics listed in the answer need, most needed first: the Sigma "
        "logsources, Elastic indices, Splunk data sources, ECS event categories and schemas that correspond "
        "(serving/coverage/log_sources.yaml) and how many of the store's rules and schemas have them; null when "
        "analytics are not asked.",
    )
    technique_layer: LayerReport | None = Field(
        default=None,
        description="What was read of the `technique_layer` asked, if one was: its techniques and those left out.",
    )
    took_ms: float
