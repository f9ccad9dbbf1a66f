# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's fleets (issue 40 items 2-6): a pipeline released together stages one release id on
three local destinations and switches them all or none; one review for the fleet; rollback,
activation and the releases operation over the whole fleet."""

from __future__ import annotations

import os
import re
import shlex

import pytest

IDS = ("web1", "web2", "web3")
OUTPUTS = [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.png"}]
V1 = {"index.md": b"# Version one\n", "logo.png": b"\x89PNG logo"}
V2 = dict(V1, **{"index.md": b"# Version two\n", "news.md": b"# News\n"})
FLEET_LINE = "site (released together: web1, web2, web3)"
# The whole approval a check prints: the digests and, for a fleet, the release id it chose.
APPROVAL = re.compile(r"run the same command without --check, adding: (-e '\{distributor_expected_plans: \{[^']*\}\}'[^\"]*)\"")


@pytest.fixture
def fleet(tmp_path, make_bundle):
    """site, released together to web1, web2 and web3 (local roots of their own), publishing V1."""
    def destination(name):
        return {"storage": {"type": "local", "root": str(tmp_path / name)}, "path": "site", "releases": {"keep": 3}}

    return {"distributor_destinations": {name: destination(name) for name in IDS},
            "distributor_pipelines": {"site": {"outputs": OUTPUTS, "destinations": list(IDS), "release_together": True}},
            "distributor_publications": [{"pipeline": "site", "source": make_bundle(V1, id="site.example")}]}


def with_bundle(fleet, make_bundle, files, created="2026-06-05T11:55:00Z") -> dict:
    return dict(fleet, distributor_publications=[{"pipeline": "site", "source": make_bundle(files, id="site.example", created=created)}])


def live(tmp_path) -> dict:
    return {name: os.path.basename(os.readlink(str(tmp_path / name / "site"))) for name in IDS}


def one(ids: dict) -> str:
    assert len(set(ids.values())) == 1, ids
    return next(iter(ids.values()))


def serves(tmp_path, text: bytes) -> bool:
    return all(text in (tmp_path / name / "site" / "index.html").read_bytes() for name in IDS)


def test_a_fleet_switches_every_destination_to_one_release_and_a_rerun_changes_nothing(role, fleet, tmp_path):
    output, results = role(fleet)
    first = one(live(tmp_path))
    assert {r["item"]["destination"]: r["release"]["id"] for r in results} == {name: first for name in IDS}
    assert "%s: activate none -> %s on every destination (web1, web2, web3), switch window" % (FLEET_LINE, first) in output
    assert serves(tmp_path, b"Version one")

    output, results = role(fleet)  # molecule's idempotence, for a fleet
    assert "changed=0" in output and {r["action"] for r in results} == {"skip"}
    assert "%s: nothing to release, every destination is unchanged" % FLEET_LINE in output
    assert live(tmp_path) == {name: first for name in IDS}


def test_a_destination_that_cannot_stage_fails_the_run_naming_it_and_none_switches(role, fleet, tmp_path, make_bundle):
    role(fleet)
    first = one(live(tmp_path))
    (tmp_path / "web3" / "site" / "news.html").write_bytes(b"planted by hand\n")

    output, _results = role(with_bundle(fleet, make_bundle, V2), expect_rc=2)
    assert "site -> web3 failed (" in output and "site -> web1 failed" not in output
    assert "%s: none switched: web3 could not stage release" % FLEET_LINE in output
    assert live(tmp_path) == {name: first for name in IDS} and serves(tmp_path, b"Version one")

    (tmp_path / "web3" / "site" / "news.html").unlink()
    role(with_bundle(fleet, make_bundle, V2))  # the next publish clears what the failed one staged
    assert one(live(tmp_path)) != first and serves(tmp_path, b"Version two")


def test_a_check_prints_each_digest_and_the_fleets_and_a_plan_changed_on_one_destination_switches_none(
        role, fleet, tmp_path, make_bundle, playbook):
    role(fleet)
    first = one(live(tmp_path))
    second = with_bundle(fleet, make_bundle, V2)
    output, checked = role(second, check=True, diff=True)
    digests = {r["item"]["destination"]: r["plan_digest"] for r in checked}
    for name in IDS:
        assert "site -> %s: replace (" % name in output and digests[name] in output
    fleet_digest = re.search(r"%s: would stage release (\S+) on every destination, then switch them together; fleet plan (sha256:\w+)"
                             % re.escape(FLEET_LINE), output).group(2)
    approval = tuple(shlex.split(APPROVAL.search(output).group(1)))
    assert "site: %s" % fleet_digest in " ".join(approval) and any(a.startswith("distributor_release_id=") for a in approval)
    assert live(tmp_path) == {name: first for name in IDS}

    # web2 changes between the review and the run: its plan differs (and the fleet, now mixed, would
    # build on every destination, which changes theirs too), so no destination switches.
    web2 = dict(fleet["distributor_destinations"]["web2"], id="web2")
    playbook.publish(source=make_bundle(V2, id="site.example", created="2026-06-05T11:55:00Z"),
                     pipeline=dict(id="site", outputs=OUTPUTS), destination=web2)
    web2_now = live(tmp_path)["web2"]
    output, _results = role(second, extra=approval, expect_rc=2)
    assert "site -> web2 failed (" in output and "%s: none switched: " % FLEET_LINE in output
    assert live(tmp_path) == {"web1": first, "web2": web2_now, "web3": first}


def published_twice(role, fleet, make_bundle, tmp_path) -> tuple:
    role(fleet)
    first = one(live(tmp_path))
    role(with_bundle(fleet, make_bundle, V2))
    return first, one(live(tmp_path))


def test_a_fleet_rolls_back_together_reviewed_as_one(role, fleet, tmp_path, make_bundle):
    first, second = published_twice(role, fleet, make_bundle, tmp_path)
    rollback = dict(fleet, distributor_rollback_pipeline="site")
    output, checked = role(rollback, operation="rollback", check=True, diff=True)
    assert "%s: rollback %s -> %s on every destination" % (FLEET_LINE, second, first) in output
    approval = tuple(shlex.split(APPROVAL.search(output).group(1)))
    assert live(tmp_path) == {name: second for name in IDS}

    _output, switched = role(rollback, operation="rollback", extra=approval)
    assert sorted((r["item"]["destination"], r["from"], r["release"]) for r in switched) == [(n, second, first) for n in IDS]
    assert live(tmp_path) == {name: first for name in IDS} and serves(tmp_path, b"Version one")


def test_a_mixed_fleet_is_shown_refused_for_rollback_unless_named_and_converged_by_a_publish(
        role, fleet, tmp_path, make_bundle, playbook):
    first, second = published_twice(role, fleet, make_bundle, tmp_path)
    web1 = dict(fleet["distributor_destinations"]["web1"], id="web1")
    [back] = playbook.run([{"distributor.core.distributor_release": {"pipeline_id": "site", "release": "previous", "destination": web1}}])
    assert back["release"] == first and live(tmp_path) == {"web1": first, "web2": second, "web3": second}

    output, shown = role(fleet, operation="releases")
    assert "web1 active %s" % first in output and "web2 active %s" % second in output
    assert "MIXED: their active releases differ" in output and len(shown) == 3

    rollback = dict(fleet, distributor_rollback_pipeline="site")
    output, _results = role(rollback, operation="rollback", expect_rc=2)
    assert "failed (conflict)" in output and "web1" in output and "web2" in output
    assert live(tmp_path) == {"web1": first, "web2": second, "web3": second}
    role(dict(rollback, distributor_rollback_release=first), operation="rollback")
    assert live(tmp_path) == {name: first for name in IDS}

    [forward] = playbook.run([{"distributor.core.distributor_release": {"pipeline_id": "site", "release": second, "destination": web1}}])
    assert forward["release"] == second
    output, _results = role(with_bundle(fleet, make_bundle, V2))
    assert "MIXED" in output
    converged = one(live(tmp_path))
    assert converged not in (first, second) and serves(tmp_path, b"Version two")
    output, _results = role(with_bundle(fleet, make_bundle, V2))
    assert "they agree" in output and "changed=0" in output and one(live(tmp_path)) == converged


def test_a_fleet_stages_without_switching_then_activates_the_staged_release(role, fleet, tmp_path, make_bundle):
    role(fleet)
    first = one(live(tmp_path))
    for name in IDS:
        fleet["distributor_destinations"][name]["releases"]["preview_url"] = "https://%s.preview.example.com/{release}/" % name
    output, staged = role(dict(with_bundle(fleet, make_bundle, V2), distributor_activate=False))
    [new] = {r["release"]["id"] for r in staged}
    assert {r["release"]["status"] for r in staged} == {"staged"}
    assert "staged release %s on every destination, not switched (distributor_activate: false)" % new in output
    for name in IDS:
        assert "site -> %s: " % name in output and "release %s staged at https://%s.preview.example.com/%s/" % (new, name, new) in output
    assert live(tmp_path) == {name: first for name in IDS}

    activate = dict(fleet, distributor_rollback_pipeline="site", distributor_release=new)
    output, switched = role(activate, operation="activate")
    assert "%s: activate %s -> %s on every destination" % (FLEET_LINE, first, new) in output
    assert live(tmp_path) == {name: new for name in IDS} and serves(tmp_path, b"Version two")
    output, _results = role(dict(activate, distributor_release=""), operation="activate", expect_rc=2)
    assert "activate needs distributor_release" in output


def test_a_pipeline_released_together_takes_one_bundle_a_run(role, fleet, make_bundle):
    fleet["distributor_publications"].append({"pipeline": "site", "source": make_bundle(V2, id="other")})
    output, results = role(fleet, expect_rc=2)
    assert "pipeline 'site' is released together: a run publishes one bundle through it, not 2" in output and results is None


def test_destinations_with_nothing_to_change_stage_the_release_too_when_another_built_it(role, fleet, tmp_path):
    """web2's page drifted: verify repairs it there, which builds a release; web1 and web3, unchanged,
    build the same release id (build: always) so that the whole fleet switches to it."""
    role(fleet)
    first = one(live(tmp_path))
    (tmp_path / "web2" / "site" / "index.html").write_bytes(b"<p>edited on the server</p>\n")

    output, results = role(dict(fleet, distributor_verify="sha256"))
    again = sorted(r["item"]["plan_key"] for r in results if "plan_key" in r["item"])
    assert again == ["site/web1/fleet", "site/web3/fleet"], output
    second = one(live(tmp_path))
    assert second != first and serves(tmp_path, b"Version one")
    assert "%s: activate %s -> %s on every destination" % (FLEET_LINE, first, second) in output
