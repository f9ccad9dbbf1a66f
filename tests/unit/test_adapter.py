# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What leaves a module through `adapter.run_module`: secrets given as no_log options never
reach the result, and a result without any comes out as Ansible itself would write it."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common import warnings

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations import adapter
from ansible_collections.distributor.core.plugins.module_utils._distributor.argspec import DESTINATION, RESULT

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
SPEC = dict(destination=DESTINATION)


def _module_output(capsys, monkeypatch, storage: dict, result: dict, module_class=None) -> dict:
    """Run one module the way AnsiballZ does: arguments in `_ANSIBLE_ARGS`, the result on stdout."""
    arguments = {"destination": {"id": "web", "storage": storage}, "_ansible_diff": True}
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": arguments}).encode())
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy")
    monkeypatch.setattr(warnings, "_global_warnings", {})  # one module run per process, one per test here
    if module_class is not None:
        monkeypatch.setattr(adapter, "DistributorModule", module_class)
    with pytest.raises(SystemExit):
        adapter.run_module(SPEC, lambda params, check_mode: json.loads(json.dumps(result)))
    return json.loads(capsys.readouterr().out)


def _published(echo: str) -> dict:
    return {"changed": True, "written": ["a/%05d.html" % n for n in range(200)], "skipped": False,
            "destination": {"id": "web", "note": echo}, "outputs": [{"path": "a.html", "size": 4}],
            "warnings": ["the bundle is old"], "diff": {"before": "x\n", "after": "y\n"}}


def test_a_no_log_secret_echoed_by_a_result_is_stripped(capsys, monkeypatch):
    storage = {"type": "s3", "bucket": "site", "access_key": "AKIDEXAMPLE", "secret_key": SECRET}
    out = _module_output(capsys, monkeypatch, storage, _published("signed with " + SECRET))
    text = json.dumps(out)
    assert SECRET not in text
    assert out["destination"]["note"] == "signed with ********"
    assert out["invocation"]["module_args"]["destination"]["storage"]["secret_key"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"
    assert out["written"][-1] == "a/00199.html" and "the bundle is old" in json.dumps(out["warnings"])


class _AnsiblesOwnFormatting(adapter.DistributorModule):
    """The module with Ansible's own `_return_formatted`: the walk over every value."""

    _return_formatted = basic.AnsibleModule._return_formatted
    _record_module_result = basic.AnsibleModule._record_module_result


@pytest.mark.parametrize("storage", [{"type": "local", "root": "/srv/www"}, {"type": "s3", "bucket": "site"}])
def test_a_result_without_secrets_comes_out_as_ansible_writes_it(capsys, monkeypatch, storage):
    result = _published("plain")
    ours = _module_output(capsys, monkeypatch, storage, result)
    ansibles = _module_output(capsys, monkeypatch, storage, result, _AnsiblesOwnFormatting)
    assert json.dumps(ours) == json.dumps(ansibles)
    assert ours["written"] == result["written"] and ours["diff"] == result["diff"]
    assert "the bundle is old" in json.dumps(ours["warnings"]) and "invocation" in ours


def test_a_result_without_secrets_is_not_walked_for_them(capsys, monkeypatch):
    walked = []
    monkeypatch.setattr(basic, "remove_values", lambda value, strings: walked.append(value) or value)
    out = _module_output(capsys, monkeypatch, {"type": "local", "root": "/srv/www"}, _published("plain"))
    assert out["written"][0] == "a/00000.html"
    assert walked and all(value["written"] is None for value in walked if isinstance(value, dict))


def test_a_path_in_the_result_is_still_described_by_ansible(capsys, monkeypatch, tmp_path):
    result = {"changed": False, "path": str(tmp_path), "manifest": {"files": []}}
    out = _module_output(capsys, monkeypatch, {"type": "local", "root": "/srv/www"}, result)
    assert out["path"] == str(tmp_path) and out["state"] == "directory" and out["manifest"] == {"files": []}


def test_the_collector_is_off_while_the_module_works_and_back_on_after(capsys, monkeypatch):
    seen = []
    arguments = {"destination": {"id": "web", "storage": {"type": "local", "root": "/srv/www"}}}
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": arguments}).encode())
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy")
    with pytest.raises(SystemExit):
        adapter.run_module(SPEC, lambda params, check_mode: seen.append(gc.isenabled()) or {"changed": False})
    assert seen == [False] and gc.isenabled()
    assert json.loads(capsys.readouterr().out)["changed"] is False


# A module program as AnsiballZ and `python -m` run one: its `main` runs as `__main__`. The atexit
# handler registered first runs last: after the module's result is out, before the interpreter's
# own passes over what is left.
PROGRAM = textwrap.dedent("""
    import atexit, gc, json, sys
    from ansible.module_utils import basic
    from ansible_collections.distributor.core.plugins.module_utils._distributor.operations import adapter
    from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
    atexit.register(lambda: sys.stderr.write("frozen %d enabled %s" % (gc.get_freeze_count(), gc.isenabled())))
    destination = {"id": "web", "storage": {"type": "local", "root": "/srv/www"}}
    basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": {"destination": destination}}).encode()
    basic._ANSIBLE_PROFILE = "legacy"
    kept = []
    def operation(params, check_mode):
        kept.extend(["f/%d" % n, n] for n in range(50000))
        if sys.argv[1] == "fail":
            raise DistributorError("conflict", "the destination says no")
        return {"changed": False, "written": [], "count": len(kept)}
    adapter.run_module(dict(destination=dict(type="dict")), operation)
""")


@pytest.mark.parametrize("outcome", ["exit", "fail"])
def test_a_module_run_as_the_program_exits_as_ansible_expects_without_walking_its_objects(outcome):
    """A module process ends with the module: what it allocated is frozen before the collector
    is back on, and the result, the exit status and atexit handlers stay Python's own."""
    done = subprocess.run([sys.executable, "-c", PROGRAM, outcome], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), check=False)
    result = json.loads(done.stdout)
    if outcome == "exit":
        assert done.returncode == 0 and result["changed"] is False and result["count"] == 50000
    else:
        assert done.returncode == 1 and result["failed"] is True and result["reason"] == "conflict"
    frozen, enabled = done.stderr.split()[1::2]
    assert int(frozen) > 50000 and enabled == "True"


def test_a_module_run_in_the_callers_process_freezes_nothing(capsys, monkeypatch):
    frozen = gc.get_freeze_count()
    _module_output(capsys, monkeypatch, {"type": "local", "root": "/srv/www"}, _published("plain"))
    assert gc.get_freeze_count() == frozen and gc.isenabled()


def test_a_record_file_in_a_directory_others_can_write_is_warned_of_in_the_result_and_in_the_record(capsys, monkeypatch, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    where = shared / "run0.jsonl"
    arguments = {"destination": {"id": "web", "storage": {"type": "local", "root": "/srv/www"}}, "record_file": str(where)}
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": arguments}).encode())
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy")
    monkeypatch.setattr(warnings, "_global_warnings", {})
    with pytest.raises(SystemExit):
        adapter.run_module(dict(SPEC, **RESULT), lambda params, check_mode: {"changed": False, "written": []})
    out = json.loads(capsys.readouterr().out)
    warned = "%s is writable by every account (mode 1777)" % shared
    assert out["record_file"] == str(where) and warned in json.dumps(out["warnings"])
    assert warned in json.dumps([json.loads(line) for line in where.read_text().splitlines()])
