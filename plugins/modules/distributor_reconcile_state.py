#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, distributor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: distributor_reconcile_state
short_description: Remove records of managed outputs that no longer exist from a destination's state
version_added: 0.1.0
description:
  - Opens one destination bundle path, reads its C(.distributor.json) and checks that every output it
    records for the selected owner still exists. Records of missing outputs are removed and the state's
    C(updated_at) is set to now; nothing else in the record changes.
  - Reports entries under the bundle path that no record claims (reserved C(.distributor*) files excluded).
  - Never validates digests, deletes files, adopts unmanaged entries, or rewrites invalid state or
    another owner's single-owner state; those fail with C(invalid_state) or C(conflict). A bundle path
    without C(.distributor.json) fails with C(unmanaged), since distributor manages nothing there.
  - In a shared root only the selected owner is checked unless I(all_owners=true).
  - Check mode is the dry run; it writes nothing, not even a lock. With C(--diff) the result holds
    listings of the managed outputs before and after.
options:
  all_owners:
    description:
      - In a shared root, check and repair the records of every owner, not only the selected one.
      - No effect on single-owner state.
    type: bool
    default: false
extends_documentation_fragment:
  - distributor.core._distributor.ATTRIBUTES
  - distributor.core._distributor.RESULT
  - distributor.core._distributor.PLAN_REVIEW
  - distributor.core._distributor.MANAGED_ROOT
  - distributor.core._distributor.SELECTOR
  - distributor.core._distributor.DESTINATION
attributes:
  check_mode:
    description: Check mode is the dry run; nothing is written, not even a lock.
    support: full
  diff_mode:
    description: Returns listings of the managed outputs and state before and after.
    support: full
notes:
  - It removes records only; it never deletes files, and unmanaged files are only reported.
seealso:
  - module: distributor.core.distributor_manifest
  - module: distributor.core.distributor_publish
  - module: distributor.core.distributor_prune
  - name: distributor configuration reference
    description: Every pipeline and destination setting.
    link: https://github.com/distributor-project/distributor/blob/main/docs/config.md
  - name: distributor repair guide
    description: Reconcile-state and prune, what they remove and how they fail.
    link: https://github.com/distributor-project/distributor/blob/main/docs/repair.md#repairing-state-and-pruning
author:
  - distributor maintainers (@distributor)
requirements:
  - python >= 3.10
  - jsonschema >= 4.17
  - paramiko >= 3.4 (for C(sftp) storage)
  - boto3 >= 1.28 (for C(s3) storage)
"""

EXAMPLES = r"""
- name: Forget outputs someone deleted by hand from a dated archive
  distributor.core.distributor_reconcile_state:
    pipeline_id: reports
    created: "2026-06-04T11:55:00Z"
    destination:
      id: archive
      storage:
        type: local
        root: /srv/www/reports
      path: "archive/{created:%Y-%m-%d}"
  register: repaired

- name: Check every owner of a shared S3 root without changing anything
  distributor.core.distributor_reconcile_state:
    pipeline_id: events
    all_owners: true
    destination:
      id: bucket
      storage:
        type: s3
        bucket: reports
        prefix: site
      state:
        mode: shared_root
  check_mode: true
  register: audit

- name: Fail when the root holds files nobody manages
  ansible.builtin.assert:
    that: audit.unmanaged | length == 0
    fail_msg: "unmanaged files in the shared root: {{ audit.unmanaged }}"
"""

RETURN = r"""
plan_digest:
  description:
    - C(sha256:<64 hex>) over what this run does and relies on (action, bundle path, this owner's
      recorded source, every write and delete, who managed each path it touches), without the clock.
    - The same in check mode and in the real run that follows on the same destination and bundle;
      pass it as O(expect_plan_digest) to require exactly that plan.
  returned: always
  type: str
  sample: sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
changes:
  description:
    - One entry per affected path, sorted by path; the first O(result_limit) of them (RV(changes_count) counts them all).
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The output path.
      type: str
    change:
      description: What happens to it.
      type: str
      choices: [create, update, delete, take_over, force_overwrite]
    owner:
      description: The owner (C(pipeline/destination)) managing it after the change; for a delete, the one it is deleted from.
      type: str
    previous_owner:
      description: Who managed it before; null for nobody.
      type: str
    before:
      description: The recorded sha256 before, when there was a record.
      type: str
    after:
      description: The sha256 after; null for a delete.
      type: str
reason:
  description:
    - On failure, the machine-readable cause, one of the following.
    - V(invalid_config) - a pipeline or destination setting is wrong (the message names the field).
    - V(invalid_state) - the destination's C(.distributor.json), journal or lock record is not valid.
    - V(locked) - another publisher held the root for longer than O(lock_timeout).
    - V(plan_changed) - O(expect_plan_digest) was given and this run's plan differs; nothing was changed.
    - V(storage_error) - the storage refused or failed an operation (the message names the location).
  returned: failure
  type: str
  sample: invalid_config
bundle_path:
  description: The rendered bundle path under the root; empty for the root itself.
  returned: success
  type: str
  sample: archive/2026-06-04
owners:
  description: The owners whose records were checked; the first O(result_limit).
  returned: success
  type: list
  elements: dict
  contains:
    pipeline_id:
      description: Pipeline id of the owner.
      type: str
    destination_id:
      description: Destination id of the owner.
      type: str
  sample: [{pipeline_id: reports, destination_id: archive}]
missing:
  description:
    - Output paths recorded for a checked owner that do not exist; their records are removed (or would be, in check mode).
    - The first O(result_limit); RV(missing_count) counts them all.
  returned: success
  type: list
  elements: str
  sample: [chart.png]
unmanaged:
  description: Entries under the bundle path that no record of any owner claims; never changed. The first O(result_limit).
  returned: success
  type: list
  elements: str
  sample: [notes.txt]
state:
  description:
    - The C(.distributor.json) record after the repair (written, or that would be in check mode); unchanged when nothing is missing.
    - Its C(outputs) and each manifest's C(files) hold the first O(result_limit) entries; O(record_file) holds it whole.
  returned: success
  type: dict
  sample: {schema_version: 2, pipeline_id: reports, destination_id: archive, updated_at: "2026-06-05T08:00:00Z"}
owners_count:
  description: How many owners were checked.
  returned: success
  type: int
  sample: 1
missing_count:
  description: How many records name files that are gone.
  returned: success
  type: int
  sample: 2
unmanaged_count:
  description: How many entries under the bundle path no record claims.
  returned: success
  type: int
  sample: 1
changes_count:
  description: How many paths the run affects.
  returned: always
  type: int
  sample: 2
truncated:
  description:
    - Each list of the result that O(result_limit) cut, as its name (a list inside an object by its dotted path,
      C(state.outputs)), and how many entries it leaves out. Empty when every list is whole.
  returned: success
  type: dict
  sample: {missing: 900, changes: 900}
record_file:
  description: The absolute path of the O(record_file) written.
  returned: when O(record_file) is set
  type: str
  sample: /var/lib/distributor/records/reports.archive.reconcile.jsonl
record_sha256:
  description: C(sha256:<64 hex>) of the bytes of the O(record_file) written.
  returned: when O(record_file) is set
  type: str
  sample: sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
"""

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.adapter import run_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.argspec import MANAGED_ROOT, RESULT
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.managed_root import Selector
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.reconcile import reconcile_state


def main():
    argument_spec = dict(MANAGED_ROOT, all_owners=dict(type="bool", default=False), **RESULT)
    run_module(
        argument_spec,
        lambda params, check_mode: reconcile_state(
            params["pipeline_id"], params["destination"], all_owners=params["all_owners"],
            selector=Selector(params["source_id"], params["created"]), check_mode=check_mode, lock_timeout=params["lock_timeout"],
            expect_plan_digest=params["expect_plan_digest"], result_limit=params["result_limit"],
        ),
    )


if __name__ == "__main__":
    main()
