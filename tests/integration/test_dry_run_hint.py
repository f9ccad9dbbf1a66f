# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""invalid_state and conflict failures end with the task that shows, read-only, what the
destination records; that task, copied from the message, runs and shows it."""

from __future__ import annotations

import json

import pytest

TASK = "- distributor.core.distributor_state_info: "


def destination(root):
    return {"id": "site", "storage": {"type": "local", "root": str(root), "file_mode": "0644"},
            "path": "{created:%Y-%m-%d}"}


def the_task(message: str) -> dict:
    assert TASK in message, message
    return json.loads(message[message.index(TASK) + len(TASK):])


def break_state(root):
    (root / "2026-06-04" / ".distributor.json").write_text('{"schema_version": 2, "outputs": "not a list"}')


def publish_another_bundle_with_the_same_id_and_time(playbook, make_bundle, root):
    return playbook.publish(source=make_bundle({"index.html": b"other bytes"}), pipeline={"id": "reports"},
                            destination=destination(root))


@pytest.mark.parametrize("reason, damage", [
    ("invalid_state", lambda playbook, make_bundle, root: break_state(root)),
    ("conflict", publish_another_bundle_with_the_same_id_and_time),
])
def test_the_message_ends_with_the_state_info_task_for_that_bundle_path_and_the_task_runs(
        playbook, make_bundle, tmp_path, reason, damage):
    root = tmp_path / "www"
    published = playbook.publish(source=make_bundle({"index.html": b"v1"}), pipeline={"id": "reports"}, destination=destination(root))
    assert published["changed"], published
    if reason == "invalid_state":
        damage(playbook, make_bundle, root)
        failed = playbook.publish(source=make_bundle({"index.html": b"v1"}), pipeline={"id": "reports"},
                                  destination=destination(root), check=True, diff=True)
    else:
        failed = damage(playbook, make_bundle, root)
    assert failed.get("failed") and failed["reason"] == reason, failed
    task = the_task(failed["msg"])
    assert failed["msg"].endswith(json.dumps(task, ensure_ascii=False))
    assert task == {"destination": {"id": "site", "storage": {"type": "local", "root": str(root)}, "path": "2026-06-04"}}

    [report] = playbook.run([{"distributor.core.distributor_state_info": task}])
    assert not report.get("failed") and report["exists"] and report["bundle_path"] == "2026-06-04", report
    if reason == "invalid_state":
        assert not report["valid"] and report["error"] in failed["msg"]
    else:
        assert report["valid"] and [o["path"] for o in report["outputs"]] == ["index.html"]
