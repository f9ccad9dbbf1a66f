# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Secrets (`password`, `secret_key`, `session_token`) never reach what a playbook run shows:
not the `-vvv --diff` output, not warnings, not the registered results, whether the publish
succeeds or fails. Every secret carries a marker the assertions look for, so a secret that
shows up escaped, quoted or stripped of its surroundings is caught too."""

from __future__ import annotations

import json

import yaml

SFTP_PASSWORD = "pw-SFTPSECRET1-'\"/+=%\u00e4"
S3_SECRET_KEY = "sk-S3SECRET2/+=%\u00e4"
S3_SESSION_TOKEN = "st-S3TOKEN3/+="
# A token read from a file or an environment variable may keep its newline; the HTTP client
# then refuses it in an error message that quotes the header value.
S3_TOKEN_WITH_NEWLINE = "st-S3TOKEN4\n"
MARKERS = ("SFTPSECRET1", "S3SECRET2", "S3TOKEN3", "S3TOKEN4")
PIPELINE = {"id": "reports", "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}]}
NO_BUCKET = "distributor-no-such-bucket"


def destination(storage: dict, **extra) -> dict:
    return dict({"id": "archive", "storage": storage, "path": "{created:%Y-%m-%d}"}, **extra)


def publish(source: str, storage: dict, **task) -> dict:
    return dict({"distributor.core.distributor_publish": {
        "source": source, "pipeline": PIPELINE, "destination": destination(storage)}}, **task)


def record(path, count: int) -> dict:
    """The task that writes the registered results r0..r<count-1> to `path` as JSON."""
    return {"check_mode": False, "diff": False, "ansible.builtin.copy": {
        "dest": str(path), "content": "{{ [%s] | to_json }}" % ", ".join("r%d" % i for i in range(count))}}


def leaks(text: str) -> list:
    return [marker for marker in MARKERS if marker in text]


def test_secrets_stay_out_of_verbose_diff_output_and_results_on_success_and_failure(
        playbook, make_bundle, sshd_server, s3_server, tmp_path, monkeypatch):
    # Tracebacks of failed tasks too, as someone debugging a failed AWX job would turn them on.
    monkeypatch.setenv("ANSIBLE_DISPLAY_TRACEBACK", "error")
    bundle = make_bundle({"report.md": b"# Report\n"})
    sftp = sshd_server.storage(str(tmp_path / "sftp-root"), password=SFTP_PASSWORD)
    sftp_wrong_key = dict(sftp, private_key_file=sshd_server.other_key_file)
    bucket = s3_server.create_bucket()
    s3 = s3_server.storage(bucket, prefix="site", secret_key=S3_SECRET_KEY, session_token=S3_SESSION_TOKEN)
    s3_no_bucket = dict(s3, bucket=NO_BUCKET)
    s3_bad_token = dict(s3, session_token=S3_TOKEN_WITH_NEWLINE)
    s3_bad_endpoint = dict(s3, endpoint_url="not a url")
    managed = {"pipeline_id": "reports", "created": "2026-06-04T11:55:00Z"}
    tasks = [
        publish(bundle, sftp),
        publish(bundle, sftp, check_mode=True),
        {"distributor.core.distributor_reconcile_state": dict(managed, destination=destination(sftp))},
        publish(bundle, sftp_wrong_key),
        publish(bundle, s3),
        {"distributor.core.distributor_prune": dict(managed, destination=destination(s3, retention={"max_outputs": 1}))},
        publish(bundle, s3_no_bucket),
        publish(bundle, s3_bad_token),
        publish(bundle, s3_bad_endpoint),
    ]
    role_vars = {
        "distributor_destinations": {
            "sftp": {"storage": dict(sftp, root=str(tmp_path / "role-root")), "path": "{created:%Y-%m-%d}"},
            "bucket": {"storage": dict(s3, prefix="role"), "path": "{created:%Y-%m-%d}"}},
        "distributor_pipelines": {"reports": {"outputs": PIPELINE["outputs"], "destinations": ["sftp", "bucket"]}},
        "distributor_publications": [{"pipeline": "reports", "source": bundle}],
    }
    results_file = tmp_path / "results.json"
    play = [
        {"hosts": "localhost", "gather_facts": False, "tasks": [
            dict(task, register="r%d" % i, ignore_errors=True) for i, task in enumerate(tasks)] + [record(results_file, len(tasks))]},
        {"hosts": "localhost", "gather_facts": False, "roles": [{"role": "distributor.core.distributor", "vars": role_vars}]},
    ]
    path = tmp_path / "secrets.yml"
    path.write_text(yaml.safe_dump(play))
    completed = playbook.invoke(str(path), diff=True, extra=("-vvv",))
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    with open(results_file) as handle:
        results = json.load(handle)

    # The runs went where the test means them to go, so every path of interest was taken.
    published, checked, reconciled, wrong_key, s3_published, pruned, no_bucket, bad_token, bad_endpoint = results
    assert published["action"] == "publish" and not published.get("failed"), published
    assert checked["action"] == "skip" and "diff" in checked
    assert not reconciled.get("failed") and reconciled["missing"] == [], reconciled
    assert wrong_key["failed"] and wrong_key["reason"] == "storage_error", wrong_key
    assert "sftp://%s@%s:%d" % (sshd_server.username, sshd_server.host, sshd_server.port) in wrong_key["msg"]
    assert s3_published["action"] == "publish" and not s3_published.get("failed"), s3_published
    assert not pruned.get("failed"), pruned
    assert no_bucket["failed"] and no_bucket["reason"] == "storage_error" and NO_BUCKET in no_bucket["msg"], no_bucket
    assert bad_token["failed"] and bad_token["reason"] == "storage_error" and bucket in bad_token["msg"], bad_token
    assert bad_endpoint["failed"] and bad_endpoint["reason"] == "invalid_config", bad_endpoint
    assert "not a url" in bad_endpoint["msg"] and "endpoint_url" in bad_endpoint["msg"]
    assert "TASK [distributor.core.distributor : Publish each bundle" in output and "reports -> bucket" in output
    assert "changed: [localhost] => (item=reports -> sftp" in output, "the role's publish did not run"

    assert output.count('"password": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"') >= 4, "-vvv did not show the module args"
    assert '"session_token": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"' in output
    assert "Traceback (most recent call last)" in output, "no traceback was shown: the run proves less than it claims"
    assert leaks(json.dumps(results, ensure_ascii=False)) == [], "a secret is in the registered results"
    assert leaks(output) == [], "a secret is in the ansible-playbook -vvv --diff output: %s" % [
        line for line in output.splitlines() if leaks(line)][:5]
