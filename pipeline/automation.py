"""When assets refresh by themselves: Dagster's declarative automation, one condition for the graph.

A source's sensor only observes its upstream (`upstream/<source>` gets the new data version);
Dagster's automation sensor then materializes whatever that makes out of date, in dependency order:
sources/mitre_attack, then lookups/mitre_techniques, then every other source (they depend on the
lookup, so a first start publishes them with technique names already), then their embeddings.
A changed lookup re-runs its dependants: each republishes only the documents whose enriched text
changed, and their embeddings embed only the chunks whose text changed. A new parser version,
chunker or embedding model (the assets' code versions) re-runs the affected assets the same way.
Failed runs are retried by the run queue (`run_retries` in dagster.yaml).
"""

from __future__ import annotations

import dagster as dg

AUTOMATION_SENSOR = "secrag_automation"


def on_new_inputs() -> dg.AutomationCondition:
    """eager (a dependency updated, or never built), or the asset's own code version changed;
    never while it or a dependency is running, never with a dependency missing."""
    code_changed = (
        dg.AutomationCondition.code_version_changed()
        & ~dg.AutomationCondition.any_deps_missing()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    )
    return (dg.AutomationCondition.eager() | code_changed).with_label("on new inputs")


def automation_sensor() -> dg.AutomationConditionSensorDefinition:
    """The one sensor that evaluates the conditions (on by default, so nobody has to click)."""
    return dg.AutomationConditionSensorDefinition(
        AUTOMATION_SENSOR,
        target=dg.AssetSelection.all(),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=30,
        description="Materializes what new upstream versions, a new ATT&CK lookup or new code make out of date.",
    )
