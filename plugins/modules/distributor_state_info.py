#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, distributor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: distributor_state_info
short_description: Show what distributor manages at one destination bundle path
version_added: 0.2.0
description:
  - Reads the C(.distributor.json) record of one destination bundle path, the journal an interrupted
    publish left there and the lock record, and returns them as data, so playbooks and people need
    not read the files by hand.
  - Read-only. It never takes the lock and never writes, so it never makes a publisher wait; while a
    publish runs it reports the records as they were when it read them.
  - A record it cannot read is reported (RV(valid=false) with RV(error)), never a failure; only
    settings it cannot use and storage that refuses it fail.
  - For a destination in release mode (O(destination.releases)) it reads the live release through the
    bundle path's link, the lock of the release home, and lists the releases kept beside it (RV(releases),
    RV(release), RV(previous)). A link or a release index that is not what distributor writes fails with
    C(invalid_state), since neither says which release to read.
options:
  pipeline_id:
    description:
      - Limits RV(owners) and RV(outputs) to the owner this pipeline and O(destination.id) form.
      - Fills C({pipeline_id}) in O(destination.path); without it O(destination.path) must not use C({pipeline_id}).
    type: str
  verify:
    description:
      - Also look at the managed outputs (of the O(pipeline_id) owner, or of every owner) at the
        destination and report those that are RV(missing) or RV(drifted), read-only, for a nightly
        drift check; distributor_publish with the same O(verify) repairs them.
      - V(size) compares each output's size with its record (an edit that keeps the size is not
        found); V(sha256) also its digest (local and SFTP read and hash, S3 uses the object's stored
        full-object C(ChecksumSHA256) when it has one, else reads it). Unmanaged files are never read.
    type: str
    choices: [none, size, sha256]
    default: none
extends_documentation_fragment:
  - distributor.core._distributor.ATTRIBUTES
  - distributor.core._distributor.RESULT
  - distributor.core._distributor.SELECTOR
  - distributor.core._distributor.DESTINATION
attributes:
  check_mode:
    description: Reads only; runs the same in check mode.
    support: full
  diff_mode:
    description: Returns no diff; it changes nothing.
    support: none
notes:
  - Only O(destination.id), O(destination.storage) and O(destination.path) are used; the other destination keys are accepted so one
    destination dict serves every module.
  - A local lock record left by a killed publisher stays until the next publish, although the kernel released its lock;
    RV(lock.expired) then tells it from a live holder only once its expiry has passed.
seealso:
  - module: distributor.core.distributor_publish
  - module: distributor.core.distributor_reconcile_state
  - module: distributor.core.distributor_prune
  - name: distributor repair guide
    description: What distributor_state_info returns, and drift verification.
    link: https://github.com/distributor-project/distributor/blob/main/docs/repair.md#looking-at-a-destination-distributor_state_info
author:
  - distributor maintainers (@distributor)
requirements:
  - python >= 3.10
  - jsonschema >= 4.17
  - paramiko >= 3.4 (for C(sftp) storage)
  - boto3 >= 1.28 (for C(s3) storage)
"""

EXAMPLES = r"""
- name: Look at a dated archive
  distributor.core.distributor_state_info:
    created: "2026-06-04T11:55:00Z"
    destination:
      id: archive
      storage:
        type: local
        root: /srv/www/reports
      path: "archive/{created:%Y-%m-%d}"
  register: archive

- name: Say which source each owner published
  ansible.builtin.debug:
    msg: "{{ item.pipeline_id }}/{{ item.destination_id }}: {{ item.source.id }} of {{ item.source.created }}, {{ item.outputs }} outputs"
  loop: "{{ archive.owners }}"

- name: One owner of a shared S3 root
  distributor.core.distributor_state_info:
    pipeline_id: events
    destination:
      id: bucket
      storage:
        type: s3
        bucket: reports
        prefix: site
  register: events

- name: Stop when the root needs a person
  ansible.builtin.assert:
    that:
      - events.valid
      - events.interrupted is none
    fail_msg: "{{ events.error or 'an interrupted publish left ' ~ events.interrupted.unrecorded | length ~ ' outputs' }}"

- name: Nightly drift check of one owner's outputs
  distributor.core.distributor_state_info:
    pipeline_id: events
    verify: sha256
    destination:
      id: bucket
      storage:
        type: s3
        bucket: reports
        prefix: site
  register: drift
  failed_when: drift.missing or drift.drifted

- name: The releases of a web root in release mode
  distributor.core.distributor_state_info:
    destination:
      id: web
      storage:
        type: local
        root: /srv/www
      path: site
      releases:
        keep: 3
  register: web

- name: Say which release is live and where a rollback would return
  ansible.builtin.debug:
    msg: "live {{ web.release }}, rollback to {{ web.previous }}; {{ web.releases | map(attribute='status') | join(', ') }}"
"""

RETURN = r"""
reason:
  description:
    - On failure, the machine-readable cause, one of the following.
    - V(invalid_config) - a destination setting, O(created) or the rendered bundle path is wrong (the message names it).
    - V(invalid_state) - in release mode, the bundle path's link or the release index is not what distributor writes.
    - V(storage_error) - the storage refused or failed a read (the message names the location).
  returned: failure
  type: str
  sample: invalid_config
bundle_path:
  description: The rendered bundle path under the root; empty for the root itself.
  returned: success
  type: str
  sample: archive/2026-06-04
exists:
  description: Whether C(.distributor.json) exists at the bundle path (valid or not).
  returned: success
  type: bool
  sample: true
valid:
  description: Whether the state record and the journal, where they exist, could be read; see RV(error).
  returned: success
  type: bool
  sample: true
error:
  description:
    - Why the state record or the journal cannot be read, naming the file and field; V(null) when RV(valid).
    - Each message is cut to 256 characters (the last one C(…)).
  returned: success
  type: str
  sample: "/srv/www/reports/archive/2026-06-04/.distributor.json: outputs[3].path \"../x\" has an empty, '.' or '..' segment"
schema_version:
  description: The state record's schema, V(1) or V(2) (single owner) or V(3) (shared root); V(null) without a valid record.
  returned: success
  type: int
  sample: 2
mode:
  description: C(single_owner) or C(shared_root); V(null) without a valid record.
  returned: success
  type: str
  sample: single_owner
created_at:
  description: When the record was first written; V(null) without a valid record.
  returned: success
  type: str
  sample: "2026-06-04T12:00:00Z"
updated_at:
  description: When the record was last written; V(null) without a valid record.
  returned: success
  type: str
  sample: "2026-06-05T08:00:00Z"
owners:
  description:
    - The owners recorded (only the one O(pipeline_id) selects, when given); the first O(result_limit).
    - Ids read from the record (C(pipeline_id), C(destination_id), the source C(id)), here and in RV(outputs), are cut
      to 256 characters (the last one C(…)); anyone who can write the destination can write them.
    - Like every string this module returns, they show control and format characters escaped (C(\x1b), C(\u202e)).
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
    source:
      description: The source the owner last published, C(id), C(digest) and C(created).
      type: dict
    reconciliation:
      description: C(replace) or C(merge).
      type: str
    primary_url:
      description: URL of the owner's primary output, when links are configured.
      type: str
    outputs:
      description: How many outputs the owner manages.
      type: int
  sample: [{pipeline_id: reports, destination_id: archive, reconciliation: replace, outputs: 2,
            primary_url: "https://reports.example.com/archive/2026-06-04/report.html",
            source: {id: reports.example, created: "2026-06-04T11:55:00Z",
                     digest: "sha256:7d5f0b3c9e1a2d4f6b8a0c2e4f6a8b0d2f4a6c8e0b2d4f6a8c0e2a4b6d8f0a2c"}}]
outputs:
  description:
    - The output records (only the selected owner's, when O(pipeline_id) is given), sorted by path.
    - The first O(result_limit); RV(outputs_count) counts them all.
    - Each in the shared-root record form, with C(pipeline_id), C(destination_id) and the source, whatever the mode.
  returned: success
  type: list
  elements: dict
  sample: [{path: report.html, kind: generated, source_path: report.md, transform: markdown_to_html, size: 2345,
            sha256: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            pipeline_id: reports, destination_id: archive, source_id: reports.example,
            source_digest: "sha256:7d5f0b3c9e1a2d4f6b8a0c2e4f6a8b0d2f4a6c8e0b2d4f6a8c0e2a4b6d8f0a2c",
            source_created: "2026-06-04T11:55:00Z", created_at: "2026-06-04T12:00:00Z", updated_at: "2026-06-04T12:00:00Z"}]
interrupted:
  description: The journal of a publish that died before it finished, or V(null). The next publish resolves it.
  returned: success
  type: dict
  contains:
    attempt:
      description: The dead attempt's token (its staged files carry it).
      type: str
    writes:
      description: The output paths it planned to write; the first O(result_limit) (RV(truncated) counts the rest).
      type: list
      elements: str
    unrecorded:
      description:
        - Those of RV(interrupted.writes) that no valid state records. The next publish removes those it can vouch the
          interrupted publish wrote (the file there has the size and SHA-256 the journal records and belongs to the
          account distributor writes as) and names the others in a warning.
      type: list
      elements: str
  sample: {attempt: 3f9a0c2b7d1e, writes: [report.html, chart.png], unrecorded: [chart.png]}
lock:
  description: The lock record, when one exists, or V(null).
  returned: success
  type: dict
  contains:
    holder:
      description:
        - C(host:pid) of the holder, cut to 256 characters (the last one C(…)); V(null) when the record cannot be read.
        - A record over 64 KiB is read no further and cannot be read.
      type: str
    acquired_at:
      description: When it was taken (RFC3339); V(null) when unreadable.
      type: str
    expires_at:
      description: When it expires unless renewed (RFC3339); V(null) when unreadable.
      type: str
    expired:
      description:
        - The record's own RV(lock.expires_at) is past on the clock of the host running this task, or the record is unreadable.
        - A hint for people. Publishers judge a lock by its age on the storage's own clock, so a holder whose clock differs
          from this host's may still hold a lock shown as expired, and the other way round.
      type: bool
  sample: {holder: "web1:4242", acquired_at: "2026-06-04T12:00:00Z", expires_at: "2026-06-04T12:10:00Z", expired: false}
missing:
  description:
    - With O(verify), the managed outputs recorded but not at the destination, sorted; V(null) without it.
    - The first O(result_limit); RV(missing_count) counts them all.
  returned: success
  type: list
  elements: str
  sample: [chart.png]
drifted:
  description:
    - With O(verify), the managed outputs whose size (or, for V(sha256), digest) differs from their
      record, sorted; V(null) without it.
    - The first O(result_limit); RV(drifted_count) counts them all.
  returned: success
  type: list
  elements: str
  sample: [report.html]
release:
  description:
    - In release mode, the release the bundle path's link holds (the live one, whose records the other values
      describe); V(null) when the bundle path holds none yet.
  returned: when O(destination.releases) is set
  type: str
  sample: 20261206T053000Z-0123456789ab
previous:
  description:
    - In release mode, the release M(distributor.core.distributor_release) with C(release=previous) returns to, the
      newest C(superseded) release older than the live one; V(null) when there is none.
  returned: when O(destination.releases) is set
  type: str
  sample: 20261205T221500Z-3f9a0c2b7d1e
releases:
  description:
    - In release mode, every release the index beside the bundle path records, oldest first; the first O(result_limit)
      (RV(releases_count) counts them all).
    - The index is read as evidence like the state record; its ids and owners are shown as they are recorded.
  returned: when O(destination.releases) is set
  type: list
  elements: dict
  contains:
    id:
      description: The release id, C(YYYYMMDDTHHMMSSZ-<12 hex>) (the UTC second of its publish, then the attempt's token).
      type: str
    status:
      description:
        - C(staged) (built, or being built, and not switched to), C(active) (the link holds it), C(superseded) (a good
          release a later one replaced), C(failed) (an attempt that failed or died), C(rolled_back) (a rollback left it).
      type: str
      choices: [staged, active, superseded, failed, rolled_back]
    manifest_id:
      description: The id of the source its publish published.
      type: str
    manifest_digest:
      description: That source's digest.
      type: str
    owners:
      description: The owners whose outputs it holds, each C(pipeline) and C(destination).
      type: list
      elements: dict
    created:
      description: When its publish began (RFC3339).
      type: str
    built:
      description: When it was complete and durable; V(null) for an attempt that never finished.
      type: str
    activated:
      description: When the link last switched to it; V(null) if it never was.
      type: str
    from:
      description: The release it was built from (its unchanged files are links to that release's); V(null) for none.
      type: str
  sample: [{id: 20261205T221500Z-3f9a0c2b7d1e, status: superseded, manifest_id: site.example,
            manifest_digest: "sha256:7d5f0b3c9e1a2d4f6b8a0c2e4f6a8b0d2f4a6c8e0b2d4f6a8c0e2a4b6d8f0a2c",
            owners: [{pipeline: site, destination: web}], created: "2026-12-05T22:15:00Z",
            built: "2026-12-05T22:15:02Z", activated: "2026-12-05T22:15:02Z", from: null}]
releases_count:
  description: In release mode, how many releases the index records.
  returned: when O(destination.releases) is set
  type: int
  sample: 3
owners_count:
  description: How many owners are listed.
  returned: success
  type: int
  sample: 1
outputs_count:
  description: How many output records are listed.
  returned: success
  type: int
  sample: 2
missing_count:
  description: With O(verify), how many outputs are missing.
  returned: with O(verify)
  type: int
  sample: 0
drifted_count:
  description: With O(verify), how many outputs drifted.
  returned: with O(verify)
  type: int
  sample: 0
truncated:
  description:
    - Each list of the result that O(result_limit) cut, as its name (a list inside an object by its dotted path,
      C(state.outputs)), and how many entries it leaves out. Empty when every list is whole.
  returned: success
  type: dict
  sample: {outputs: 49900}
record_file:
  description: The absolute path of the O(record_file) written.
  returned: when O(record_file) is set
  type: str
  sample: /var/lib/distributor/records/reports.archive.state.jsonl
record_sha256:
  description: C(sha256:<64 hex>) of the bytes of the O(record_file) written.
  returned: when O(record_file) is set
  type: str
  sample: sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
"""

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.adapter import run_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.argspec import DESTINATION, RESULT, SELECTOR, VERIFY
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.managed_root import Selector
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info


def main():
    argument_spec = dict(SELECTOR, destination=DESTINATION, pipeline_id=dict(type="str"), verify=VERIFY, **RESULT)
    run_module(
        argument_spec,
        lambda params, check_mode: state_info(
            params["destination"], pipeline_id=params["pipeline_id"], selector=Selector(params["source_id"], params["created"]),
            verify=params["verify"]),
    )


if __name__ == "__main__":
    main()
