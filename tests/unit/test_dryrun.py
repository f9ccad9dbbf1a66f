# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Failures a person must look into end with the read-only task that shows what is recorded."""

from __future__ import annotations

import json

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.config import parse_destination
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.dryrun import with_dry_run_hint
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError

TASK = "- distributor.core.distributor_state_info: "


def task_of(message: str) -> dict:
    return json.loads(message[message.index(TASK) + len(TASK):])


@pytest.mark.parametrize("reason", ["invalid_state", "conflict"])
def test_invalid_state_and_conflict_end_with_the_state_info_task_for_the_rendered_bundle_path(reason):
    destination = parse_destination({"id": "site", "storage": {"type": "local", "root": "/srv/www", "file_mode": "0640"},
                                     "path": "{created:%Y-%m-%d}"})
    error = with_dry_run_hint(DistributorError(reason, "x/.distributor.json: broken.", {"k": 1}), destination, "2026-06-08")
    assert error.reason == reason and error.details == {"k": 1}
    assert error.message.startswith("x/.distributor.json: broken. To see what is recorded there without changing "
                                    "anything, run this task on the same host: " + TASK)
    assert task_of(error.message) == {"destination": {"id": "site", "storage": {"type": "local", "root": "/srv/www"},
                                                      "path": "2026-06-08"}}


def test_secrets_are_left_out_and_the_message_says_to_add_them():
    destination = parse_destination({"id": "bucket", "storage": {"type": "s3", "bucket": "b", "access_key": "AKIA",
                                                                 "secret_key": "s3cr3t", "acl": "private"}})
    error = with_dry_run_hint(DistributorError("conflict", "taken"), destination, "")
    assert "s3cr3t" not in error.message and "with the destination's secrets added back" in error.message
    assert task_of(error.message)["destination"]["storage"] == {"type": "s3", "bucket": "b", "access_key": "AKIA"}


@pytest.mark.parametrize("reason", ["unmanaged", "ownership_conflict", "locked", "storage_error", "plan_changed"])
def test_other_failures_are_left_as_they_are(reason):
    error = DistributorError(reason, "as it was")
    assert with_dry_run_hint(error, parse_destination({"id": "d", "storage": {"type": "local", "root": "/r"}}), "") is error
