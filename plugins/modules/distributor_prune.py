#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, distributor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: distributor_prune
short_description: Delete managed outputs that a destination's retention policy expires
version_added: 0.1.0
description:
  - Opens one destination bundle path, reads its C(.distributor.json) and selects the selected owner's
    managed outputs that I(destination.retention) expires, judged by each output's C(updated_at).
  - C(retention.max_age) selects outputs older than the age; C(retention.max_outputs) keeps the newest N
    (ties broken by path) and selects the rest; with both, an output either selects is pruned.
  - Deletes only the selected managed outputs, removes their records and sets the state's C(updated_at).
    A selected output whose file is already gone loses its record as well.
  - Never deletes unmanaged files, C(.distributor.json), or another owner's outputs in a shared root.
  - Fails with C(invalid_config) when the destination has no retention, C(unmanaged) when the bundle path
    has no C(.distributor.json), C(invalid_state) when it is invalid, and C(conflict) when single-owner
    state belongs to another owner.
  - Check mode is the dry run; it deletes and writes nothing, not even a lock. With C(--diff) the result
    holds listings of the managed outputs before and after.
extends_documentation_fragment:
  - distributor.core._distributor.ATTRIBUTES
  - distributor.core._distributor.RESULT
  - distributor.core._distributor.PLAN_REVIEW
  - distributor.core._distributor.MANAGED_ROOT
  - distributor.core._distributor.SELECTOR
  - distributor.core._distributor.DESTINATION
attributes:
  check_mode:
    description: Check mode is the dry run; nothing is deleted or written, not even a lock.
    support: full
  diff_mode:
    description: Returns listings of the managed outputs and state before and after.
    support: full
notes:
  - Check mode is C(prune --dry-run); a normal run deletes the outputs C(planned) lists.
seealso:
  - module: distributor.core.distributor_manifest
  - module: distributor.core.distributor_publish
  - module: distributor.core.distributor_reconcile_state
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
- name: Keep a month of reports, and at most 500 of them
  distributor.core.distributor_prune:
    pipeline_id: reports
    destination:
      id: latest
      storage:
        type: local
        root: /srv/www/reports
      path: latest
      retention:
        max_age: 30d
        max_outputs: 500
  register: pruned

- name: Show what pruning one owner of a shared S3 root would delete
  distributor.core.distributor_prune:
    pipeline_id: events
    destination:
      id: bucket
      storage:
        type: s3
        bucket: reports
        prefix: site
      state:
        mode: shared_root
      retention:
        max_age: 12h
  check_mode: true
  diff: true
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
    - V(unmanaged) - the bundle path holds no record, or a file retention selects is not one distributor can vouch it
      wrote (RV(unvouched) names it); nothing was deleted.
  returned: failure
  type: str
  sample: invalid_config
unvouched:
  description:
    - On an C(unmanaged) failure, each file the run would have deleted that is not distributor's to delete, with why
      (another account owns it, it is not a regular file, it has names distributor did not make). Kept, like every other file.
    - The first O(result_limit); RV(unvouched_count) counts them all.
  returned: failure
  type: list
  elements: dict
  contains:
    path:
      description: The output path.
      type: str
    why:
      description: Why distributor cannot vouch it wrote the file there.
      type: str
  sample: [{path: 2026-05-01.html, why: "is owned by uid 1000, not by uid 0"}]
unvouched_count:
  description: How many files RV(unvouched) names in all.
  returned: failure
  type: int
  sample: 1
bundle_path:
  description: The rendered bundle path under the root; empty for the root itself.
  returned: success
  type: str
  sample: latest
planned:
  description:
    - Managed output paths retention selects; their records are removed (or would be, in check mode).
    - The first O(result_limit); RV(planned_count) counts them all.
  returned: success
  type: list
  elements: str
  sample: [2026-05-01.html, 2026-05-02.html]
deleted:
  description:
    - Planned output paths whose files this run deletes (in check mode, would delete).
    - A planned path missing here was already gone; only its record was removed.
    - The first O(result_limit); RV(deleted_count) counts them all.
  returned: success
  type: list
  elements: str
  sample: [2026-05-01.html, 2026-05-02.html]
deleted_count:
  description: How many files this run deletes (in check mode, would delete); prune is not limited by C(transfer.max_deletes).
  returned: success
  type: int
  sample: 2
invalidation_paths:
  description:
    - The URL paths (through C(links.base_url)) of every output this run deletes (in check mode, would delete), for a CDN invalidation,
      percent-encoded as in the URLs, an index page also as its directory (C(/a/index.html) gives C(/a/)), sorted.
    - Above C(links.invalidation_limit) (default 1000) paths collapse to C(<directory>/*) wildcards, deepest
      directories first, so there are never more than the limit.
    - Empty when nothing is deleted or no C(links.base_url) is set.
    - Never cut by O(result_limit), since a CDN must be given every path.
  returned: success
  type: list
  elements: str
  sample: [/reports/, /reports/index.html, /reports/chart.png]
kept:
  description: The selected owner's managed output paths retention keeps; the first O(result_limit).
  returned: success
  type: list
  elements: str
  sample: [2026-06-04.html]
state:
  description:
    - The C(.distributor.json) record after pruning (written, or that would be in check mode); unchanged when nothing is planned.
    - Its C(outputs) and each manifest's C(files) hold the first O(result_limit) entries; O(record_file) holds it whole.
  returned: success
  type: dict
  sample: {schema_version: 2, pipeline_id: reports, destination_id: latest, updated_at: "2026-06-05T08:00:00Z"}
planned_count:
  description: How many output records retention removes.
  returned: success
  type: int
  sample: 2
kept_count:
  description: How many outputs retention keeps.
  returned: success
  type: int
  sample: 2
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
  sample: {planned: 4900, deleted: 4900, changes: 4900, state.outputs: 4900}
record_file:
  description: The absolute path of the O(record_file) written.
  returned: when O(record_file) is set
  type: str
  sample: /var/lib/distributor/records/reports.latest.prune.jsonl
record_sha256:
  description: C(sha256:<64 hex>) of the bytes of the O(record_file) written.
  returned: when O(record_file) is set
  type: str
  sample: sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
"""

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.adapter import run_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.argspec import MANAGED_ROOT, RESULT
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.managed_root import Selector
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune


def main():
    run_module(
        dict(MANAGED_ROOT, **RESULT),
        lambda params, check_mode: prune(
            params["pipeline_id"], params["destination"], selector=Selector(params["source_id"], params["created"]),
            check_mode=check_mode, lock_timeout=params["lock_timeout"], expect_plan_digest=params["expect_plan_digest"],
            result_limit=params["result_limit"],
        ),
    )


if __name__ == "__main__":
    main()
