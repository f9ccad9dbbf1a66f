# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's fleets as their users run them (issue 40 items 2-6, issue 41's AWX rules): a check then
the approved run, a mixed fleet, a fleet beside a pipeline not released together, one publish at a
time, approvals that do not cover a change, and task results that do not grow with the bundle."""

from __future__ import annotations

import json
import os
import shlex
import sys

import ansible_runner
import yaml

from conftest import REPO_ROOT, VENV_BIN, collections_path
from test_awx_runner import MAX_EVENT_RES, WHOLE_EVENTS, artifacts, role_events, site
import test_fleet_role
from test_fleet_role import APPROVAL, IDS, OUTPUTS, V1, V2, live, one, published_twice, serves, with_bundle

fleet = test_fleet_role.fleet  # the same three destinations, as a fixture of this module too


def approval_of(output: str) -> tuple:
    return tuple(shlex.split(APPROVAL.search(output).group(1)))


def test_a_destination_not_in_release_mode_in_a_pipeline_released_together_is_an_error_naming_it(role, fleet, tmp_path):
    fleet["distributor_destinations"]["plain"] = {"storage": {"type": "local", "root": str(tmp_path / "plain")}, "path": "site"}
    fleet["distributor_pipelines"]["site"]["destinations"].append("plain")
    output, results = role(fleet, expect_rc=2)
    assert "pipeline 'site' is released together but its destination 'plain' is not in release mode" in output and results is None
    assert not (tmp_path / "plain").exists() and not (tmp_path / "web1").exists()


def test_the_approved_run_of_a_mixed_fleet_switches_to_the_reviewed_release(role, fleet, tmp_path, make_bundle, playbook):
    first, second = published_twice(role, fleet, make_bundle, tmp_path)
    web1 = dict(fleet["distributor_destinations"]["web1"], id="web1")
    playbook.run([{"distributor.core.distributor_release": {"pipeline_id": "site", "release": "previous", "destination": web1}}])
    again = with_bundle(fleet, make_bundle, V2)
    output, _checked = role(again, check=True, diff=True)
    assert "MIXED" in output and live(tmp_path) == {"web1": first, "web2": second, "web3": second}
    output, _results = role(again, extra=approval_of(output))  # failed: the fleet plan ... is not the approved ... (plan_changed)
    converged = one(live(tmp_path))
    assert converged not in (first, second) and serves(tmp_path, b"Version two"), output


def test_the_run_job_after_an_approval_node_is_not_warned_about_the_artifacts_the_check_recorded(role, fleet, tmp_path):
    """AWX gives the run job the check's set_stats (distributor_plans, distributor_release_id) as
    extra variables, beside distributor_expected_plans: "{{ distributor_plans }}"."""
    output, _checked = role(fleet, check=True)
    approval = approval_of(output)
    plans = yaml.safe_load(approval[1])["distributor_expected_plans"]
    artifacts = json.dumps({"distributor_plans": plans, "distributor_expected_plans": plans})
    output, _results = role(fleet, extra=("-e", artifacts) + approval[2:])
    assert "is not a variable of the distributor role" not in output and one(live(tmp_path))


def test_a_fleet_digest_without_the_destinations_digests_approves_nothing(role, fleet, tmp_path, make_bundle):
    role(fleet)
    first = one(live(tmp_path))
    second = with_bundle(fleet, make_bundle, V2)
    output, _checked = role(second, check=True)
    approval = approval_of(output)
    plans = yaml.safe_load(approval[1])["distributor_expected_plans"]
    only_fleet = ("-e", json.dumps({"distributor_expected_plans": {"site": plans["site"]}})) + approval[2:]
    output, _results = role(second, extra=only_fleet, expect_rc=2)
    assert "site/web1 is not approved" in output and live(tmp_path) == {name: first for name in IDS}


def test_one_publish_at_a_time_a_fleet_beside_a_pipeline_not_released_together_check_then_approved_run(role, fleet, tmp_path, make_bundle):
    fleet["distributor_destinations"]["docs"] = {"storage": {"type": "local", "root": str(tmp_path / "docs")}, "path": "docs",
                                                 "releases": {"keep": 2}}
    fleet["distributor_pipelines"]["docs"] = {"outputs": OUTPUTS, "destinations": ["docs"]}
    fleet["distributor_publications"].append({"pipeline": "docs", "source": make_bundle(V1, id="docs.example")})
    variables = dict(fleet, distributor_parallel=1)
    output, checked = role(variables, check=True, diff=True)
    assert len(checked) == 4 and "site:" in " ".join(approval_of(output)) and "docs/docs:" in " ".join(approval_of(output))
    output, results = role(variables, extra=approval_of(output))
    assert one(live(tmp_path)) and serves(tmp_path, b"Version one") and (tmp_path / "docs" / "docs" / "index.html").exists(), output
    output, results = role(variables)
    assert "changed=0" in output


def test_an_approval_of_nothing_to_release_does_not_cover_a_change_the_run_finds(role, fleet, tmp_path, make_bundle, playbook):
    """The check finds nothing to release; then web1 is rolled back alone. The run, given that
    approval, finds a mixed fleet to converge (every destination builds): no plan is the approved
    one, so no destination switches."""
    first, second = published_twice(role, fleet, make_bundle, tmp_path)
    again = with_bundle(fleet, make_bundle, V2)
    output, _checked = role(again, check=True)
    assert "nothing to release, every destination is unchanged" in output
    web1 = dict(fleet["distributor_destinations"]["web1"], id="web1")
    playbook.run([{"distributor.core.distributor_release": {"pipeline_id": "site", "release": "previous", "destination": web1}}])
    output, _results = role(again, extra=approval_of(output), expect_rc=2)
    assert "site -> web1 failed (plan_changed)" in output and "none switched" in output
    assert live(tmp_path) == {"web1": first, "web2": second, "web3": second}


def awx_job(tmp_path, variables: dict, cmdline: str):
    """The publish job template run as AWX runs it (ansible_runner, its event callback), every
    event's result whole (WHOLE_EVENTS) so that its real size is measured."""
    directory = tmp_path / ("job-%d" % len(list(tmp_path.glob("job-*"))))
    directory.mkdir()
    inventory = {"all": {"children": {"distributor_publishers": {"vars": variables, "hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}
    runner = ansible_runner.run(private_data_dir=str(directory), project_dir=os.path.join(REPO_ROOT, "playbooks"),
                                playbook="publish.yml", inventory=inventory, cmdline=cmdline, quiet=True,
                                envvars=dict(WHOLE_EVENTS, ANSIBLE_COLLECTIONS_PATH=collections_path(),
                                             PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", "")))
    assert (runner.status, runner.rc) == ("successful", 0), runner.stdout.read()
    return runner


def test_no_event_of_a_fleet_publish_carries_a_bundle_sized_value(fleet, tmp_path, make_bundle):
    """3 destinations, 10,000 files: the check job (--diff) and the approved run job keep every
    task's event within what the result_limit lists hold (a few hundred files), whatever the
    bundle's size; the approval travels as set_stats artifacts (distributor_plans, distributor_release_id)."""
    big = with_bundle(fleet, make_bundle, site(10000))
    check = awx_job(tmp_path, big, "--check --diff")
    recorded = artifacts(check)
    approved = dict(recorded, distributor_expected_plans=recorded["distributor_plans"])
    run = awx_job(tmp_path, big, "-e %s" % shlex.quote(json.dumps(approved)))
    for runner in (check, run):
        events = role_events(runner)
        assert max(events["sizes"].values()) <= MAX_EVENT_RES and max(events["named"].values()) <= 300, events
    print({"check": max(role_events(check)["sizes"].items(), key=lambda item: item[1]),
           "run": max(role_events(run)["sizes"].items(), key=lambda item: item[1])})
    assert one(live(tmp_path)) == recorded["distributor_release_id"]


def test_an_approved_fleet_run_without_the_checks_release_id_is_refused_before_staging(role, fleet, tmp_path, make_bundle):
    """The fleet digest covers the release id the check chose. A run given the digests alone staged
    a release of another id on every destination, then refused the switch (the fleet plan is not
    the approved one) without saying why, and the check's id no longer sorted after the one staged."""
    role(fleet)
    first = one(live(tmp_path))
    second = with_bundle(fleet, make_bundle, V2)
    output, _checked = role(second, check=True)
    approval = approval_of(output)
    output, results = role(second, extra=approval[:2], expect_rc=2)
    assert "distributor_expected_plans approves fleet 'site', whose digest covers the release id its check chose, " \
           "but distributor_release_id is not given: add the -e distributor_release_id=" in output and results is None
    output, _results = role(second, extra=approval)
    assert one(live(tmp_path)) not in (first, None) and serves(tmp_path, b"Version two")


def test_the_check_of_a_staging_only_publish_says_it_will_not_switch(role, fleet, tmp_path):
    """distributor_activate: false: the check said the run would switch every destination."""
    output, _checked = role(dict(fleet, distributor_activate=False), check=True)
    assert "would stage release" in output and "then switch them together" not in output, output
    assert "on every destination, not switched (distributor_activate: false)" in output
