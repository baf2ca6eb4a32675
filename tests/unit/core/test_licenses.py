"""Cluster licenses and hierarchical resources: admission and the pass."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler import (
    ApplyConfig,
    ConfigApplied,
    JobPending,
    JobRejected,
    JobStarted,
    SubmitJob,
    decide,
    evolve,
)
from tests.unit.core.gwt import T0, Scenario, given, nodes, queued, schedule_pass, sluid, spec

CLUSTER = "Licenses: matlab:2,abaqus:1\n"
RESOURCES = """\
- resource: scratch
  mode: MODE_1
  layers:
    - nodes: ["n[1-2]"]
      count: 10
    - nodes: ["n[3-4]"]
      count: 1
"""


def _started(facts: Sequence[object]) -> list[str]:
    return [f.job_sluid for f in facts if isinstance(f, JobStarted)]


def _reasons(facts: Sequence[object]) -> dict[str, str]:
    return {f.job_sluid: f.reason for f in facts if isinstance(f, JobPending)}


def _with_resources(*facts: object) -> Scenario:
    scenario = given(nodes("n", 4), *facts, config=CLUSTER)  # type: ignore[arg-type]
    [applied] = decide(
        scenario.state, ApplyConfig(config_sluid=sluid(80), kind="resources", text=RESOURCES), T0
    )
    assert isinstance(applied, ConfigApplied)
    scenario.state = evolve(scenario.state, applied)
    return scenario


def test_cluster_licenses_limit_how_many_jobs_run_and_do_not_block_others() -> None:
    outcome = given(
        nodes("n", 4),
        queued(sluid(1), spec(licenses="matlab:2")),
        queued(sluid(2), spec(licenses="matlab")),
        queued(sluid(3)),
        config=CLUSTER,
    ).when(schedule_pass())
    assert _started(outcome.facts) == [sluid(1), sluid(3)]
    assert _reasons(outcome.facts) == {sluid(2): "Licenses"}


def test_either_license_may_serve_a_request_with_a_bar() -> None:
    outcome = given(
        nodes("n", 4),
        queued(sluid(1), spec(licenses="matlab:2")),
        queued(sluid(2), spec(licenses="matlab|abaqus")),
        config=CLUSTER,
    ).when(schedule_pass())
    assert _started(outcome.facts) == [sluid(1), sluid(2)]


def test_unknown_or_malformed_license_requests_are_rejected() -> None:
    state = given(config=CLUSTER).state
    for text in ("gauss", "matlab:x", "matlab 2"):
        [fact] = decide(state, SubmitJob(job_sluid=sluid(1), spec=spec(licenses=text)), T0)
        assert isinstance(fact, JobRejected) and fact.reason == "InvalidLicense", text


def test_a_hierarchical_resource_steers_jobs_to_layers_with_room() -> None:
    scenario = _with_resources(
        queued(sluid(1), spec(resources="scratch:1")),
        queued(sluid(2), spec(resources="scratch:8")),
        queued(sluid(3), spec(resources="scratch:5")),
    )
    outcome = scenario.when(schedule_pass(), T0 + 1)
    starts = {f.job_sluid: f.nodes for f in outcome.facts if isinstance(f, JobStarted)}
    assert sluid(1) in starts and sluid(2) in starts
    assert set(starts[sluid(2)]) <= {"n1", "n2"}
    assert _reasons(outcome.facts) == {sluid(3): "Licenses"}


def test_a_bad_resources_file_is_rejected() -> None:
    state = given(config=CLUSTER).state
    [fact] = decide(
        state,
        ApplyConfig(
            config_sluid=sluid(81), kind="resources", text="- resource: x\n  mode: MODE_9\n"
        ),
        T0,
    )
    assert isinstance(fact, JobRejected) and fact.reason == "InvalidConfig"


def test_a_license_count_not_in_plain_digits_is_invalid_not_an_internal_error() -> None:
    from scheduler.resources.requests import LicenseSyntaxError, parse_licenses
    for text in ("foo:\u00b2", "foo:" + "9" * 5000):
        try:
            parse_licenses(text)
        except LicenseSyntaxError:
            continue
        raise AssertionError(f"{text[:10]!r} was accepted")
