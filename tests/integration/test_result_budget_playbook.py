# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""result_limit and record_file through the real ansible-playbook: the lists a module returns,
their counts and what they leave out, and the whole result written where it belongs."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

PIPELINE = {"id": "reports", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.txt"}]}
FILES = dict({"p%02d.md" % i: b"# Page %d\n" % i for i in range(20)}, **{"f%02d.txt" % i: b"%d\n" % i for i in range(10)})


@pytest.fixture
def destination(tmp_path):
    return {"id": "web", "storage": {"type": "local", "root": str(tmp_path / "www")}, "path": "site",
            "links": {"base_url": "https://example.com/site/"}, "retention": {"max_outputs": 2}}


def digest_of(path) -> str:
    with open(path, "rb") as handle:
        return "sha256:" + hashlib.sha256(handle.read()).hexdigest()


def test_each_list_holds_result_limit_entries_with_its_count_and_the_plan_digest_covers_them_all(
        playbook, make_bundle, destination):
    bundle = make_bundle(FILES)
    task = {"source": bundle, "pipeline": PIPELINE, "destination": destination}
    cut, whole = (playbook.publish(check=True, diff=True, result_limit=limit, **task) for limit in (5, -1))
    assert cut["plan_digest"] == whole["plan_digest"]
    assert (len(cut["written"]), cut["written_count"], len(whole["written"])) == (5, 30, 30)
    assert cut["written"] == whole["written"][:5] and cut["changes"] == whole["changes"][:5]
    assert cut["truncated"] == {"written": 25, "changes": 25, "outputs": 25, "state.outputs": 25,
                                "state.source.manifest.files": 25}
    assert whole["truncated"] == {} and whole["changes_count"] == 30 and whole["deleted_count"] == 0
    assert len(cut["invalidation_paths"]) == len(whole["invalidation_paths"]) == 30
    listing, *contents = cut["diff"]
    assert listing["after"].endswith("# 25 more output(s) not shown, 25 of them changed\n")
    assert len(contents) == 6 and contents[-1]["prepared"] == (
        "diff skipped: 25 more output(s) written, not shown: result_limit is 5\n")


def test_a_plan_changed_failure_returns_its_changes_within_result_limit(playbook, make_bundle, destination):
    failed = playbook.publish(source=make_bundle(FILES), pipeline=PIPELINE, destination=destination, result_limit=3,
                              expect_plan_digest="sha256:" + "0" * 64)
    assert failed["failed"] and failed["reason"] == "plan_changed"
    assert len(failed["changes"]) == 3 and failed["changes_count"] == 30 and failed["truncated"] == {"changes": 27}


def test_a_result_limit_below_minus_one_is_invalid_config_and_publishes_nothing(playbook, make_bundle, destination):
    failed = playbook.publish(source=make_bundle(FILES), pipeline=PIPELINE, destination=destination, result_limit=-2)
    assert failed["reason"] == "invalid_config" and "result_limit -2" in failed["msg"]
    assert not os.path.exists(destination["storage"]["root"])


def test_the_record_file_holds_every_entry_and_the_plan_and_the_result_its_digest(playbook, make_bundle, destination, tmp_path):
    record = tmp_path / "records" / "publish.jsonl"
    result = playbook.publish(source=make_bundle(FILES), pipeline=PIPELINE, destination=destination, result_limit=2,
                              record_file=str(record))
    assert result["changed"] and result["record_file"] == str(record) and result["record_sha256"] == digest_of(record)
    assert os.listdir(record.parent) == ["publish.jsonl"], "no staged file is left"
    with open(record, "rb") as handle:
        head, plan, *lines = [json.loads(line) for line in handle]
    assert head["check_mode"] is False and head["result"]["plan_digest"] == result["plan_digest"]
    assert head["result"]["written_count"] == 30 and "truncated" not in head["result"]
    canonical = json.dumps(plan["plan"], sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    assert "sha256:" + hashlib.sha256(canonical).hexdigest() == result["plan_digest"]
    assert sorted(line["written"] for line in lines if "written" in line) == sorted(p.replace(".md", ".html") for p in FILES)
    [state] = [line["state"] for line in lines if "state" in line]
    assert len(state["outputs"]) == 30


def test_check_mode_writes_the_record_of_the_review_and_nothing_at_the_destination(
        playbook, make_bundle, destination, tmp_path):
    record = tmp_path / "check.jsonl"
    checked = playbook.publish(check=True, source=make_bundle(FILES), pipeline=PIPELINE, destination=destination,
                               record_file=str(record))
    assert checked["record_sha256"] == digest_of(record) and not os.path.exists(destination["storage"]["root"])


def test_a_record_file_that_cannot_be_written_fails_before_anything_is_published(
        playbook, make_bundle, destination, tmp_path):
    (tmp_path / "a-file").write_bytes(b"")
    failed = playbook.publish(source=make_bundle(FILES), pipeline=PIPELINE, destination=destination,
                              record_file=str(tmp_path / "a-file" / "record.jsonl"))
    assert failed["reason"] == "invalid_config" and "record_file" in failed["msg"]
    assert not os.path.exists(destination["storage"]["root"])


def test_prune_reconcile_state_and_state_info_return_their_lists_within_result_limit(
        playbook, make_bundle, destination, tmp_path):
    playbook.publish(source=make_bundle(FILES), pipeline=PIPELINE, destination=destination)
    for name in ("f00.txt", "f01.txt", "f02.txt", "f03.txt"):
        os.remove(os.path.join(destination["storage"]["root"], "site", name))
    selected = {"pipeline_id": "reports", "destination": destination, "result_limit": 1}
    info, repaired, pruned = playbook.run([
        {"distributor.core.distributor_state_info": dict(selected, verify="size")},
        {"distributor.core.distributor_reconcile_state": dict(selected, record_file=str(tmp_path / "reconcile.jsonl"))},
        {"distributor.core.distributor_prune": selected},
    ], diff=True)
    assert (len(info["outputs"]), info["outputs_count"], info["missing_count"]) == (1, 30, 4)
    assert info["truncated"] == {"outputs": 29, "missing": 3}
    assert (repaired["missing"], repaired["missing_count"], repaired["truncated"]["missing"]) == (["f00.txt"], 4, 3)
    assert repaired["record_sha256"] == digest_of(tmp_path / "reconcile.jsonl")
    assert (len(pruned["planned"]), pruned["planned_count"], pruned["deleted_count"], pruned["kept_count"]) == (1, 24, 24, 2)
    assert pruned["diff"]["before"].endswith("# 25 more output(s) not shown, 23 of them changed\n")
