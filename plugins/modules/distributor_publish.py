#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, distributor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: distributor_publish
short_description: Publish a source bundle to a destination and record what distributor manages there
version_added: 0.1.0
description:
  - Reads the bundle's C(manifest.json), produces outputs with the pipeline's rules, compares the
    source with the destination's C(.distributor.json) and publishes, skips, replaces, merges or
    takes over exactly as the destination state contract says.
  - Never overwrites or deletes content distributor does not manage unless I(force=true), and then
    only within the bundle path.
  - Check mode is the dry run; it writes nothing, not even a lock. With C(--diff) the result holds
    listings of the managed outputs before and after, then a content diff of each text output
    written (old content read from the destination, in check mode too).
  - With O(destination.releases) (release mode, C(local) and C(sftp)) the bundle path is a symbolic link to one
    complete release, and the publish plans against the live release as it would against the bundle path, builds the
    next release beside it (unchanged outputs as hard links, the rest written), makes it durable and switches the
    link in one rename; RV(release) says what it built, switched, converted and removed.
options:
  manifest:
    description:
      - The bundle's manifest, used in place of its C(manifest.json), which is then not read.
      - Pass the RV(distributor.core.distributor_manifest#module:manifest) that
        M(distributor.core.distributor_manifest) returns, so that a play that builds the manifest
        and publishes predicts the publish in check mode, where the manifest is not written.
      - Validated exactly like C(manifest.json); every file is verified against it while it is read.
      - That result lists the first O(distributor.core.distributor_manifest#module:result_limit) files only; for a bundle of
        more, register it with O(distributor.core.distributor_manifest#module:result_limit=-1), or give O(manifest_id) instead,
        which hands no manifest from task to task.
    type: dict
    version_added: 0.2.0
  manifest_id:
    description:
      - Describe the bundle as it is now, with this source id, in place of reading its C(manifest.json);
        the manifest M(distributor.core.distributor_manifest) would write with O(distributor.core.distributor_manifest#module:id)
        (C(created) derived the same way from the bundle and the C(manifest.json) it has), built where the publish runs.
      - For a check after a C(distributor_manifest) task that wrote nothing (check mode), without handing its
        RV(distributor.core.distributor_manifest#module:manifest), one entry per file, from task to task; the role's
        C(distributor_build_manifests) uses it. Not with O(manifest).
    type: str
    version_added: 0.2.0
  source:
    description: Directory of the source bundle (holding C(manifest.json)).
    type: path
    required: true
  force:
    description:
      - Forced replacement when the publish would otherwise fail as C(conflict), C(unmanaged) or
        C(invalid_state). Bounded to the bundle path; in a shared root it only overwrites colliding
        unmanaged paths and never deletes other owners' outputs.
    type: bool
    default: false
  lock_timeout:
    description: Seconds to wait for another publisher of the same root before failing with C(locked).
    type: float
    default: 60
  return_records:
    description:
      - Return this owner's output records as RV(outputs) and the full C(.distributor.json) record
        as RV(state) even without C(--diff).
      - They hold one entry per output (the state also the whole manifest), so for bundles of
        thousands of files they are most of the result and cost Ansible more than the publish
        itself; with C(--diff) or O(record_file) they are always returned (and recorded whole). RV(written),
        RV(deleted) and RV(primary_url) are always returned.
    type: bool
    default: false
    version_added: 0.2.0
  verify:
    description:
      - Also look at this owner's managed outputs at the destination, not only at the state record,
        and rewrite from the bundle those that are missing or differ from their records (edited,
        truncated or deleted by hand), even when the decision is C(skip).
      - V(none) trusts the state record, as the contract says. V(size) compares each output's size
        with its record (an edit that keeps the size is not found). V(sha256) also compares its
        digest; local and SFTP read and hash the file, S3 uses the object's stored full-object
        C(ChecksumSHA256) when it has one, else reads it.
      - Only the outputs this run keeps as they are and that this bundle produces with their
        recorded content are checked; other owners' outputs and unmanaged files are never read.
        RV(action) stays what the contract decided; RV(repaired) lists the rewritten paths, each a
        C(repair) in RV(changes), and check mode reports them without writing.
    type: str
    choices: [none, size, sha256]
    default: none
    version_added: 0.2.0
extends_documentation_fragment:
  - distributor.core._distributor.ATTRIBUTES
  - distributor.core._distributor.RESULT
  - distributor.core._distributor.PLAN_REVIEW
  - distributor.core._distributor.DESTINATION
  - distributor.core._distributor.PIPELINE
attributes:
  check_mode:
    description:
      - Check mode is the dry run; nothing at the destination changes, not even a lock.
      - It reads and verifies every bundle file the run would copy, and fails C(storage_error) when the publishing account
        could not write a directory the run writes in, so a clean check predicts a run that does not fail for either.
    support: full
  diff_mode:
    description:
      - Returns a list of diffs; the first lists the managed outputs and state before and after.
      - Then one entry per output written; text (UTF-8) shows the old content against the new, binary
        content, content over 64 KiB and content distributor does not manage say so in one line, and
        after 1 MiB of content per task the rest do too.
    support: full
notes:
  - An unchanged source is a skip, but a change of storage settings alone (modes, ownership, S3 object settings) rewrites the outputs it affects.
  - A file edited by hand at the destination is not repaired by republishing the same bytes; see O(verify) and docs/repair.md.
  - With both O(manifest) and a C(manifest.json) in O(source), O(manifest) wins and the file is ignored.
  - O(force=true) never deletes another owner's outputs in a shared root and never forces over invalid shared-root state.
seealso:
  - module: distributor.core.distributor_manifest
  - module: distributor.core.distributor_reconcile_state
  - module: distributor.core.distributor_prune
  - name: distributor configuration reference
    description: Every pipeline and destination setting.
    link: https://github.com/distributor-project/distributor/blob/main/docs/config.md
  - name: distributor publishing guide
    description: Actions, force, review with --check --diff, approved plans, content diffs.
    link: https://github.com/distributor-project/distributor/blob/main/docs/publishing.md
author:
  - distributor maintainers (@distributor)
requirements:
  - python >= 3.10
  - jsonschema >= 4.17
  - Markdown >= 3.5 (for the C(markdown_to_html) transform)
  - Pygments >= 2.15 (optional, syntax highlighting of fenced code in C(markdown_to_html))
  - paramiko >= 3.4 (for C(sftp) storage)
  - boto3 >= 1.28 (for C(s3) storage)
"""

EXAMPLES = r"""
- name: Publish today's reports to the web root
  distributor.core.distributor_publish:
    source: /srv/bundles/reports-2026-06-04
    pipeline:
      id: reports
      outputs:
        - match: "**/*.md"
          transform: markdown_to_html
        - match: "**/*.png"
    destination:
      id: archive
      storage:
        type: local
        root: /srv/www/reports
      path: "archive/{created:%Y-%m-%d}"
      links:
        base_url: "https://reports.example.com/archive/{created:%Y-%m-%d}/"
  register: published

- name: Publish into a shared S3 root next to other pipelines
  distributor.core.distributor_publish:
    source: /srv/bundles/events
    pipeline:
      id: events
    destination:
      id: bucket
      storage:
        type: s3
        bucket: reports
        prefix: site
      state:
        mode: shared_root
      reconciliation:
        mode: merge
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
      choices: [create, update, delete, take_over, force_overwrite, repair, settings]
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
action:
  description: What the publish did, C(publish), C(skip), C(replace), C(merge), C(takeover), C(force_replace) or C(migrate).
  returned: success
  type: str
  sample: replace
reason:
  description:
    - On success, why the module did what RV(action) says, in one sentence.
    - On failure, the machine-readable cause, one of the following.
    - V(conflict) - the destination records the same source id and time with another digest, or another owner's state.
    - V(delete_limit) - the plan deletes more outputs than C(transfer.max_deletes) (the outputs of an interrupted publish
      that recovery deletes included), or an empty bundle would delete outputs without C(transfer.allow_empty); nothing was
      changed.
    - V(invalid_config) - a pipeline or destination setting is wrong (the message names the field).
    - V(invalid_manifest) - the bundle's C(manifest.json) is not valid or does not match its files.
    - V(invalid_state) - the destination's C(.distributor.json), journal or lock record is not valid.
    - V(locked) - another publisher held the root for longer than O(lock_timeout).
    - V(plan_changed) - O(expect_plan_digest) was given and this run's plan differs; nothing was changed.
    - V(ownership_conflict) - a planned path is owned by another owner of a shared root.
    - V(storage_error) - the storage refused or failed an operation (the message names the location).
    - V(unmanaged) - content distributor does not manage is in the way (use O(force=true) to replace it), or a file the run
      would delete or write over is not one distributor can vouch it wrote (RV(unvouched) names it; O(force) does not
      apply); nothing was changed.
    - V(verification_failed) - a file's size or sha256 differs from the manifest while it is read.
  returned: always
  type: str
  sample: source reports.2026-06-04 created 2026-06-04T12:00:00Z is newer than the recorded 2026-06-03T12:00:00Z
bundle_path:
  description: The rendered bundle path under the root; empty for the root itself.
  returned: success
  type: str
  sample: archive/2026-06-04
primary_url:
  description: The primary output's URL, when links are configured.
  returned: success
  type: str
  sample: https://reports.example.com/archive/2026-06-04/report.html
written:
  description: Output paths written (or that would be, in check mode); the first O(result_limit), RV(written_count) counts them all.
  returned: success
  type: list
  elements: str
  sample: [report.html, chart.png]
resettled:
  description:
    - Output paths whose bytes stay and whose storage settings (mode, ownership, S3 object settings) changed, given the
      new settings in place without writing their bytes (or that would be, in check mode); each a C(settings) in RV(changes).
    - One that is not the file distributor wrote (its digest differs, or it has other links) is written again instead.
  returned: success
  type: list
  elements: str
  sample: [report.html]
repaired:
  description:
    - Output paths O(verify) found missing or drifted and rewrote as recorded (or would, in check mode); the first O(result_limit).
  returned: success
  type: list
  elements: str
  sample: [report.html]
deleted:
  description: Output paths deleted (or that would be); the first O(result_limit), RV(deleted_count) counts them all.
  returned: success
  type: list
  elements: str
  sample: [old.html]
recovered:
  description:
    - Output paths an interrupted publish wrote and no state records, which recovery deleted before this run's plan
      (or would, in check mode), as the journal it left names them.
    - Only files distributor can vouch it wrote are here (local and SFTP, owned by the account it writes as or
      C(storage.owner); every backend, of the size and SHA-256 the journal records); whatever else the journal names
      is left alone and named in a warning. A leftover this publish writes again with the same bytes is replaced by
      that write instead and is not listed.
    - Counted toward C(transfer.max_deletes), with RV(deleted).
  returned: success
  type: list
  elements: str
  sample: [draft.html]
staging_removed:
  description:
    - Empty staging directories (C(.distributor.tmp.<token>)) of interrupted attempts that this run removed (or would, in
      check mode), local and SFTP. Only those owned by the account distributor writes as; one that is not empty or not
      its own is named in a warning and left. Not counted toward C(transfer.max_deletes).
  returned: success
  type: list
  elements: str
  sample: [docs/.distributor.tmp.3f9c0a1b2c4d]
invalidation_paths:
  description:
    - The URL paths (through C(links.base_url)) of every output written or deleted (or that would be, in check mode), for a CDN invalidation,
      percent-encoded as in the URLs, an index page also as its directory (C(/a/index.html) gives C(/a/)), sorted.
    - Above C(links.invalidation_limit) (default 1000) paths collapse to C(<directory>/*) wildcards, deepest
      directories first, so there are never more than the limit.
    - Empty when nothing is written or deleted or no C(links.base_url) is set.
    - Never cut by O(result_limit), since a CDN must be given every path.
  returned: success
  type: list
  elements: str
  sample: [/reports/, /reports/index.html, /reports/chart.png]
retained:
  description: Output paths kept through C(merge) although the new plan omits them; the first O(result_limit).
  returned: success
  type: list
  elements: str
  sample: []
taken_over:
  description:
    - Planned paths another owner (or, in a single-owner root, the previous pipeline or source)
      managed before this run; they are this owner's afterwards. Empty unless I(action) is C(takeover).
  returned: success
  type: list
  elements: str
  sample: []
forced:
  description:
    - Unmanaged paths that I(force=true) overwrites or deletes in this run.
  returned: success
  type: list
  elements: str
  sample: []
outputs:
  description: The output records now managed for this pipeline and destination, sorted by path; the first O(result_limit).
  returned: with C(--diff), I(return_records=true) or O(record_file)
  type: list
  elements: dict
  sample: [{path: report.html, kind: generated, source_path: report.md, transform: markdown_to_html,
            sha256: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", size: 2345,
            created_at: "2026-06-04T12:00:00Z", updated_at: "2026-06-04T12:00:00Z",
            render_key: "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"}]
state:
  description:
    - The C(.distributor.json) record written, or that would be written in check mode.
    - Its C(outputs) and each manifest's C(files) hold the first O(result_limit) entries (RV(truncated) says how many are left out);
      O(record_file) holds it whole.
  returned: with C(--diff), I(return_records=true) or O(record_file)
  type: dict
  sample: {schema_version: 2, pipeline_id: reports, destination_id: archive}
release:
  description:
    - In release mode, what the publish did with releases. A publish that changes nothing (C(skip)) builds no release
      unless C(releases.build=always) (then the task is changed though RV(action) is C(skip)), and check mode builds none;
      then RV(release.status) is V(null), RV(release.id) is C(releases.id) in check mode when a run would build it
      (else V(null)), and RV(release.from), RV(release.failed), RV(release.removed) and RV(release.previous) say what
      a run would start from and do.
    - With C(--diff), the second diff is the release part, which names the release built and the one it is built from, the switch
      (or that the release is staged, not switched), and each release removed with its status (a C(staged) one as a
      preview, with its preview URL).
  returned: when O(destination.releases) is set
  type: dict
  contains:
    id:
      description: The release this publish built, C(YYYYMMDDTHHMMSSZ-<12 hex>); V(null) when it built none.
      type: str
    status:
      description:
        - C(active) when the bundle path's link was switched to it, C(staged) when C(releases.activate=false) left it
          to preview (switch to it with M(distributor.core.distributor_release)); V(null) when none was built.
      type: str
      choices: [active, staged]
    from:
      description: The release that was live when the publish began (its unchanged files are linked into the new one); V(null) for none.
      type: str
    converted:
      description:
        - When C(releases.convert=true) turned a plain bundle path into the first release, C(id) (that release) and
          C(window_seconds), how long the bundle path did not exist between the two renames; V(null) otherwise.
      type: dict
    removed:
      description:
        - Releases removed by this run (dead attempts cleared, and those keep-N no longer keeps after the switch). In check
          mode exactly those the run removes, each judged as the run judges it (one it would keep whole is in RV(release.kept)).
      type: list
      elements: str
    removes_at_switch:
      description:
        - With C(releases.activate=false) only, in check mode too; the releases a switch to the release this publish
          staged would remove (keep-N after that switch, M(distributor.core.distributor_release)); the plan digest
          covers them. V([]) when no release was built.
      type: list
      elements: str
      version_added: 0.2.0
    failed:
      description: Attempts that died before they were built, marked C(failed) by this run (in check mode, that would be).
      type: list
      elements: str
    kept:
      description:
        - Releases keep-N or recovery would remove but left whole, each C(id) and C(why) (they hold files no record
          names, or a file distributor cannot vouch it wrote, such as one of another account).
      type: list
      elements: dict
    previous:
      description: The release M(distributor.core.distributor_release) with C(release=previous) returns to after this run; V(null) for none.
      type: str
    preview_url:
      description:
        - The URL the new release can be looked at before it is switched to, C(releases.preview_url) with C({release}) filled in;
          V(null) without that setting or without a new release.
      type: str
  sample: {id: 20261206T053000Z-0123456789ab, status: active, from: 20261205T221500Z-3f9a0c2b7d1e, converted: null,
           removed: [20261203T080000Z-aa00bb11cc22], failed: [], kept: [], previous: 20261205T221500Z-3f9a0c2b7d1e,
           preview_url: null}
written_count:
  description: How many output paths are written (or would be); RV(written) lists the first O(result_limit).
  returned: success
  type: int
  sample: 2
repaired_count:
  description: How many outputs O(verify) repairs.
  returned: success
  type: int
  sample: 0
deleted_count:
  description: How many output paths are deleted (or would be).
  returned: success
  type: int
  sample: 1
resettled_count:
  description: How many outputs get new storage settings in place (or would).
  returned: success
  type: int
  sample: 0
recovered_count:
  description: How many outputs of an interrupted publish recovery deletes (or would).
  returned: success
  type: int
  sample: 0
staging_removed_count:
  description: How many empty staging directories of interrupted attempts are removed (or would be).
  returned: success
  type: int
  sample: 0
retained_count:
  description: How many outputs C(merge) keeps.
  returned: success
  type: int
  sample: 0
taken_over_count:
  description: How many paths are taken over from another owner.
  returned: success
  type: int
  sample: 0
forced_count:
  description: How many unmanaged paths I(force=true) overwrites or deletes.
  returned: success
  type: int
  sample: 0
unvouched:
  description:
    - On an C(unmanaged) failure, each file the run would have deleted or written over that is not distributor's to
      touch, with why (another account owns it, it is not a regular file, it has names distributor did not make). Kept,
      like every other file.
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
  sample: [{path: report.pdf, why: "is owned by uid 1000, not by uid 0"}]
unvouched_count:
  description: How many files RV(unvouched) names in all.
  returned: failure
  type: int
  sample: 1
changes_count:
  description: How many paths the run affects; RV(changes) holds the first O(result_limit).
  returned: always
  type: int
  sample: 3
outputs_count:
  description: How many outputs this pipeline and destination manage after the run.
  returned: with C(--diff), I(return_records=true) or O(record_file)
  type: int
  sample: 2
truncated:
  description:
    - Each list of the result that O(result_limit) cut, as its name (a list inside an object by its dotted path,
      C(state.outputs)), and how many entries it leaves out. Empty when every list is whole.
    - A C(plan_changed) failure returns it too, for its RV(changes).
  returned: success
  type: dict
  sample: {written: 49900, changes: 49900, state.outputs: 49900, state.source.manifest.files: 49900}
record_file:
  description: The absolute path of the O(record_file) written.
  returned: when O(record_file) is set
  type: str
  sample: /var/lib/distributor/records/reports.archive.run.jsonl
record_sha256:
  description: C(sha256:<64 hex>) of the bytes of the O(record_file) written.
  returned: when O(record_file) is set
  type: str
  sample: sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
"""

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.adapter import run_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.argspec import DESTINATION, PIPELINE, RESULT, VERIFY
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish


def main():
    argument_spec = dict(
        RESULT,
        source=dict(type="path", required=True),
        pipeline=PIPELINE,
        destination=DESTINATION,
        force=dict(type="bool", default=False),
        lock_timeout=dict(type="float", default=60.0),
        return_records=dict(type="bool", default=False),
        manifest=dict(type="dict"),
        manifest_id=dict(type="str"),
        expect_plan_digest=dict(type="str"),
        verify=VERIFY,
    )
    run_module(
        argument_spec,
        lambda params, check_mode, diff_mode: publish(
            params["source"], params["pipeline"], params["destination"], force=params["force"], lock_timeout=params["lock_timeout"],
            check_mode=check_mode, full_result=diff_mode or params["return_records"] or bool(params["record_file"]),
            manifest_option=params["manifest"],
            diff_contents=diff_mode, expect_plan_digest=params["expect_plan_digest"], verify=params["verify"],
            result_limit=params["result_limit"], manifest_id=params["manifest_id"],
        ),
        diff_aware=True,
    )


if __name__ == "__main__":
    main()
