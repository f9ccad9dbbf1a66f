# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Nothing raw reaches a terminal: an `ESC[1A ESC[2K` (cursor up, erase the line) in a manifest
id, in another owner's id, in destination content and in a lock holder shows escaped in what
ansible-playbook prints: the `--diff` listing and content diff, a failure message and the result
of distributor_state_info. Run as a reviewer runs it, with --check --diff."""

from __future__ import annotations

import json
import os

import yaml

HIDE = "\x1b[1A\x1b[2K"
SHOWN = "\\x1b[1A\\x1b[2K"


def publish(source: str, pipeline_id: str, destination: dict) -> dict:
    return {"distributor.core.distributor_publish": {
        "source": source, "pipeline": {"id": pipeline_id}, "destination": destination}}


def test_escape_sequences_from_ids_content_and_records_show_escaped_in_check_diff_output(playbook, make_bundle, tmp_path):
    root = tmp_path / "root"
    destination = {"id": "archive", "storage": {"type": "local", "root": str(root)}, "state": {"mode": "shared_root"}}
    other = make_bundle({"e/x.txt": b"theirs\n"}, id="events.daily")
    first = make_bundle({"notes.txt": b"kept\n" + HIDE.encode() + b"hidden\n"}, id="reports" + HIDE,
                        created="2026-06-03T00:00:00Z")
    playbook.run([publish(other, "ev" + HIDE, destination), publish(first, "reports", destination)])
    (root / ".distributor.lock").write_text(json.dumps({"holder": "web1" + HIDE, "acquired_at": 0, "expires_at": 0}))

    second = make_bundle({"notes.txt": b"kept\nshown\n"}, id="reports" + HIDE)
    colliding = make_bundle({"notes.txt": b"kept\n", "e/x.txt": b"mine\n"}, id="reports" + HIDE)
    results = tmp_path / "results.json"
    tasks = [dict(task, register="r%d" % i, ignore_errors=True) for i, task in enumerate([
        publish(second, "reports", destination),
        publish(colliding, "reports", destination),
        {"distributor.core.distributor_state_info": {"destination": destination}},
    ])]
    tasks.append({"check_mode": False, "ansible.builtin.copy": {"dest": str(results), "content": "{{ [r0, r1, r2] | to_json }}"}})
    playbook_file = tmp_path / "review.yml"
    playbook_file.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))

    completed = playbook.invoke(str(playbook_file), check=True, diff=True)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    out = completed.stdout + completed.stderr
    assert "\x1b" not in out, "a raw ESC reached the terminal"
    assert "# owner reports/archive: source reports%s created" % SHOWN in out  # the manifest id, in the listing
    assert "  ev%s/archive" % SHOWN in out  # another owner's id, on its output's line of the listing
    assert "-%shidden" % SHOWN in out  # destination content, in the unified diff of notes.txt
    diffed, refused, info = json.loads(results.read_text())
    assert not diffed.get("failed") and "notes.txt" in diffed["written"]
    assert refused["reason"] == "ownership_conflict" and "e/x.txt is owned by ev%s/archive" % SHOWN in refused["msg"]
    assert info["lock"]["holder"] == "web1" + SHOWN
    assert sorted(owner["pipeline_id"] for owner in info["owners"]) == ["ev" + SHOWN, "reports"]
    assert os.path.exists(root / ".distributor.lock") and (root / "e" / "x.txt").read_bytes() == b"theirs\n"
