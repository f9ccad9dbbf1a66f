# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules and the role through two jump hosts, with the real ansible-playbook: the server
sits on the loopback of a network namespace that only the second jump host is in, and the second
jump host in one only the first reaches (the `jump_network` fixture, tests/network.py), so every
task that succeeds went through both. Passwords of every hop stay out of `-vvv` output."""

from __future__ import annotations

import json

import yaml

PIPELINE = {"id": "reports"}
FIRST = "2026-06-04T11:55:00Z"
SECOND = "2026-06-05T11:55:00Z"
MARKERS = ("JUMPSECRET1", "JUMPSECRET2", "SERVERSECRET3")


def behind_two_hops(network, root, **server) -> dict:
    hops = [network.jump1.connection(), network.jump2.connection()]
    return network.behind2.storage(str(root), jump_hosts=hops, **server)


def publish(source: str, destination: dict, **task) -> dict:
    return dict({"distributor.core.distributor_publish": {"source": source, "pipeline": PIPELINE,
                                                          "destination": destination}}, **task)


def test_publish_review_state_info_and_prune_go_through_two_jump_hosts(playbook, make_bundle, jump_network, tmp_path):
    root = tmp_path / "behind"
    destination = {"id": "web", "storage": behind_two_hops(jump_network, root), "path": "site",
                   "retention": {"max_outputs": 1}}
    first = make_bundle({"a.txt": b"a", "b.txt": b"b"}, created=FIRST)
    second = make_bundle({"a.txt": b"a, again", "b.txt": b"b", "c.txt": b"c"}, created=SECOND)
    published, reviewed, shown, pruned = playbook.run([
        publish(first, destination),
        publish(second, destination, check_mode=True, diff=True),
        {"distributor.core.distributor_state_info": {"destination": destination, "pipeline_id": "reports"}},
        {"distributor.core.distributor_prune": {"destination": destination, "pipeline_id": "reports"}},
    ])
    assert published["action"] == "publish" and not published.get("failed"), published
    assert reviewed["changed"] and reviewed["action"] == "replace" and not reviewed.get("failed"), reviewed
    assert "c.txt" in reviewed["diff"][0]["after"] and "c.txt" not in reviewed["diff"][0]["before"]
    assert not (root / "site" / "c.txt").exists() and (root / "site" / "a.txt").read_bytes() == b"a"
    assert not shown.get("failed") and [o["path"] for o in shown["outputs"]] == ["a.txt", "b.txt"], shown
    assert pruned["deleted"] == ["b.txt"] and pruned["kept"] == ["a.txt"], pruned
    assert sorted(p.name for p in (root / "site").iterdir() if not p.name.startswith(".")) == ["a.txt"]


def test_no_password_of_any_hop_reaches_verbose_output_or_results(
        playbook, make_bundle, jump_network, tmp_path, monkeypatch):
    """Each hop carries a password besides its key (the key logs in; the password is still a
    module argument), and one run fails at the second hop, where the password is offered too."""
    monkeypatch.setenv("ANSIBLE_DISPLAY_TRACEBACK", "error")
    bundle = make_bundle({"report.txt": b"r"})
    hops = [jump_network.jump1.connection(password="pw-JUMPSECRET1-'\"/+=%\u00e4"),
            jump_network.jump2.connection(password="pw-JUMPSECRET2/+=")]
    storage = jump_network.behind2.storage(str(tmp_path / "behind"), jump_hosts=hops, password="pw-SERVERSECRET3")
    refused = dict(storage, jump_hosts=[hops[0], dict(hops[1], private_key_file=jump_network.jump2.other_key_file)])
    destination = {"id": "web", "storage": storage, "path": "site"}
    results_file = tmp_path / "results.json"
    tasks = [publish(bundle, destination), publish(bundle, dict(destination, storage=refused))]
    role_vars = {"distributor_destinations": {"web": {"storage": dict(storage, root=str(tmp_path / "role")), "path": "x"}},
                 "distributor_pipelines": {"reports": {"destinations": ["web"]}},
                 "distributor_publications": [{"pipeline": "reports", "source": bundle}]}
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
        dict(task, register="r%d" % i, ignore_errors=True) for i, task in enumerate(tasks)] + [
        {"check_mode": False, "diff": False, "ansible.builtin.copy": {
            "dest": str(results_file), "content": "{{ [r0, r1] | to_json }}"}}]},
        {"hosts": "localhost", "gather_facts": False, "roles": [{"role": "distributor.core.distributor", "vars": role_vars}]}]
    path = tmp_path / "secrets.yml"
    path.write_text(yaml.safe_dump(play))
    completed = playbook.invoke(str(path), diff=True, extra=("-vvv",))
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    published, failed = json.loads(results_file.read_text())
    assert published["action"] == "publish" and not published.get("failed"), published
    assert failed["failed"] and failed["reason"] == "storage_error", failed
    assert "cannot log in to jump host 2 (%s:22)" % jump_network.jump2.host in failed["msg"]
    assert "tried publickey with private_key_file %s, then password" % jump_network.jump2.other_key_file in failed["msg"]
    assert "changed: [localhost] => (item=reports -> web" in output, "the role's publish did not run"
    assert output.count('"password": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"') >= 6, "-vvv did not show every hop's args"
    leaked = [line for line in output.splitlines() if any(marker in line for marker in MARKERS)]
    assert leaked == [], "a password is in the ansible-playbook -vvv output"
    assert not any(marker in json.dumps([published, failed], ensure_ascii=False) for marker in MARKERS)
