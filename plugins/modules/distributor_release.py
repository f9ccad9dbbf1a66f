#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, distributor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: distributor_release
short_description: Switch a destination in release mode to a release it holds, or roll it back
version_added: 0.2.0
description:
  - For a destination with O(destination.releases), whose bundle path is a symbolic link to one complete
    release kept in C(.distributor-releases/) beside it, points that link at another release it already
    holds, in one rename, as a publish's own switch does. Nothing is uploaded and no output is written.
  - O(release=previous) rolls back to the newest good release older than the active one (C(superseded),
    never one that was rolled back from or failed); an id activates that release, for example a C(staged)
    one that C(releases.activate=false) built for a preview.
  - Before switching it checks that every output the release's own C(.distributor.json) records is there at
    its recorded size; a release that lost files since it was built is refused with C(storage_error) and
    the link is left where it is.
  - A switch to an older release than the live one is a rollback (RV(rollback)); the release it leaves
    becomes C(rolled_back), is never returned to by O(release=previous), and is removed at the next
    publish's switch. In a shared root the whole tree switches, every owner's outputs with it;
    RV(owners) names the owners whose published source differs between the two releases.
  - Takes the lock of the release home, the one lock that publishes of this bundle path take too.
  - Fails with C(invalid_config) when the destination has no O(destination.releases), or when the release
    named is not held or cannot be activated (it failed, or was never completely built); C(no_release) when
    there is no earlier good release to return to, or the bundle path is a plain directory not yet converted to
    release mode (the message says how); C(invalid_state) when the link or the release index is
    not what distributor writes; C(storage_error) when an SFTP server lacks C(posix-rename@openssh.com).
  - A forward switch (not a rollback) then removes what keep-N (C(releases.keep)) no longer keeps, as a publish's
    switch does (RV(removed); check mode predicts it).
  - With O(fleet) instead of O(destination), one run switches several destinations to one release, all or none
    (docs/releases.md, Fleets). It connects to every destination in parallel, takes their locks in the order of their ids,
    refuses before switching any when one cannot take the release, checks every release whole and makes every new link
    before the first rename, then renames them one after the other (RV(window_seconds)) and records each. A rename
    that fails after others went through switches those back to the release they left, and the run fails with
    C(storage_error) naming each destination switched back and each that could not be. O(release=previous) needs one
    active release across the fleet (else C(conflict), naming each destination's) and returns to the newest good
    release older than it that every destination holds.
  - Check mode changes nothing, not even a lock, and makes the same checks as a run. With C(--diff) the
    result shows the release the bundle path holds before and after (one entry per destination of a fleet).
options:
  pipeline_id:
    description:
      - The pipeline whose bundle path is switched; it fills C({pipeline_id}) in O(destination.path).
      - In a shared root any of its owners may switch it, and the whole tree switches.
    type: str
    required: true
  release:
    description:
      - The release to make live, an id as RV(releases) lists them (C(YYYYMMDDTHHMMSSZ-<12 hex>)), or
        V(previous) for the newest good release older than the active one.
      - The release already active changes nothing (C(changed=false)).
    type: str
    required: true
  destination:
    description:
      - The one destination to switch, in release mode. See C(docs/config.md) for every key.
      - Exactly one of O(destination) and O(fleet).
    required: false
  fleet:
    description:
      - Destinations to switch together to one release, each a dict of the same form as O(destination) (with its own
        C(id), unique in the fleet) and in release mode. Two ids with the same storage settings and bundle path are one
        place, refused with C(invalid_config) naming both.
      - Exactly one of O(destination) and O(fleet). The result then has RV(destinations), RV(window_seconds) and one
        RV(plan_digest) for the fleet.
    type: list
    elements: dict
  lock_timeout:
    description:
      - Seconds to wait for a publisher of the same bundle path before failing with C(locked).
      - Check mode takes no lock.
    type: float
    default: 60
  expect_plan_digest:
    description:
      - The RV(plan_digest) of the check-mode run a reviewer approved.
      - The run plans as usual; if its digest differs it fails with C(plan_changed) before it switches
        anything. The digest covers the bundle path, the release switched from and to, whether it is a
        rollback and the owners it affects, so a publish of that bundle path in between (a new live
        release) changes it.
      - With O(fleet), the fleet's RV(plan_digest); a change on any destination fails the run before any switch.
      - A form C(sha256:<64 hex digits>); anything else is C(invalid_config).
    type: str
extends_documentation_fragment:
  - distributor.core._distributor.ATTRIBUTES
  - distributor.core._distributor.RESULT
  - distributor.core._distributor.SELECTOR
  - distributor.core._distributor.DESTINATION
attributes:
  check_mode:
    description:
      - Check mode changes nothing, not even a lock; it makes the checks a run makes (the release is whole, the
        server can switch atomically), so a clean check predicts the run.
    support: full
  diff_mode:
    description: Returns the release the bundle path holds before and after.
    support: full
notes:
  - Only O(destination.id), O(destination.storage), O(destination.path), O(destination.lock) and
    O(destination.releases) are used; the other destination keys are accepted so one destination dict serves
    every module.
  - C(local) and C(sftp) storage only; C(s3) has no release mode. Over SFTP the server must offer
    C(posix-rename@openssh.com) (OpenSSH does).
  - Superseded releases stay on disk until keep-N removes them and still hold what later publishes removed;
    see docs/releases.md for keeping them from being served.
seealso:
  - module: distributor.core.distributor_publish
  - module: distributor.core.distributor_state_info
  - name: distributor releases guide
    description: Layout, statuses, keep-N, preview and activate, rollback, web-server settings.
    link: https://github.com/distributor-project/distributor/blob/main/docs/releases.md
  - name: distributor configuration reference
    description: The destination's C(releases) setting.
    link: https://github.com/distributor-project/distributor/blob/main/docs/config.md#releases
author:
  - distributor maintainers (@distributor)
requirements:
  - python >= 3.10
  - jsonschema >= 4.17
  - paramiko >= 3.4 (for C(sftp) storage)
"""

EXAMPLES = r"""
- name: Roll the web root back to the release before the live one
  distributor.core.distributor_release:
    pipeline_id: site
    release: previous
    destination:
      id: web
      storage:
        type: sftp
        host: web1.example.com
        username: publisher
        root: /srv/www
      path: site
      releases:
        keep: 3

- name: Build a release to preview without switching to it
  distributor.core.distributor_publish:
    source: /srv/bundles/site
    pipeline:
      id: site
    destination: "{{ web | combine({'releases': {'activate': false}}, recursive=true) }}"
  register: staged

- name: Review the switch to it
  distributor.core.distributor_release:
    pipeline_id: site
    release: "{{ staged.release.id }}"
    destination: "{{ web }}"
  check_mode: true
  diff: true
  register: review

- name: Activate exactly the reviewed switch
  distributor.core.distributor_release:
    pipeline_id: site
    release: "{{ staged.release.id }}"
    destination: "{{ web }}"
    expect_plan_digest: "{{ review.plan_digest }}"

- name: Switch three web servers to one staged release together
  distributor.core.distributor_release:
    pipeline_id: site
    release: "{{ release_id }}"
    fleet: "{{ web_servers }}"
  register: switched

- name: Roll the three back together
  distributor.core.distributor_release:
    pipeline_id: site
    release: previous
    fleet: "{{ web_servers }}"
"""

RETURN = r"""
reason:
  description:
    - On failure, the machine-readable cause, one of the following.
    - V(invalid_config) - a destination setting is wrong, the destination has no C(releases), or the release named is
      not held or failed (the message says which).
    - V(conflict) - with O(fleet) and O(release=previous), the destinations serve different releases (each is named).
    - V(invalid_state) - the bundle path's link, the release index or the release's C(.distributor.json) is not what
      distributor writes.
    - V(locked) - a publisher held the bundle path for longer than O(lock_timeout).
    - V(no_release) - there is no earlier good release to return to, or the bundle path is a plain directory not in
      release mode (the message says how to convert it); nothing in the configuration is wrong.
    - V(plan_changed) - O(expect_plan_digest) was given and this run's plan differs; nothing was switched.
    - V(storage_error) - the storage refused or failed an operation, the release is not whole, or an SFTP server cannot
      switch a link atomically (the message names the location).
  returned: failure
  type: str
  sample: invalid_config
bundle_path:
  description: The rendered bundle path under the root, the symbolic link that is switched.
  returned: success, without O(fleet)
  type: str
  sample: site
release:
  description: The release the bundle path holds after the run (in check mode, would hold).
  returned: success
  type: str
  sample: 20261205T221500Z-3f9a0c2b7d1e
from:
  description: The release the bundle path held before; V(null) when it held none.
  returned: success, without O(fleet)
  type: str
  sample: 20261206T053000Z-0123456789ab
rollback:
  description:
    - V(true) when RV(release) is older than RV(from); the release left is then marked C(rolled_back).
    - With O(fleet), V(true) when it is for any destination.
  returned: success
  type: bool
  sample: true
owners:
  description:
    - The owners (C(pipeline/destination)) whose published source differs between RV(from) and RV(release), sorted;
      in a shared root the switch changes their outputs. The first O(result_limit).
  returned: success, without O(fleet)
  type: list
  elements: str
  sample: [site/web]
previous:
  description:
    - The release O(release=previous) would return to after this run (in check mode, as the index stands); V(null) when
      there is none.
  returned: success, without O(fleet)
  type: str
  sample: 20261204T180000Z-77aa00bb11cc
releases:
  description:
    - Every release the index records after the run (in check mode, before it), oldest first; the first O(result_limit).
  returned: success, without O(fleet)
  type: list
  elements: dict
  contains:
    id:
      description: The release id, C(YYYYMMDDTHHMMSSZ-<12 hex>) (the UTC second of its publish, then the attempt's token).
      type: str
    status:
      description: What it is now.
      type: str
      choices: [staged, active, superseded, failed, rolled_back]
    manifest_id:
      description: The id of the source the release's publish published.
      type: str
    manifest_digest:
      description: That source's digest.
      type: str
    owners:
      description: The owners whose outputs the release holds, each C(pipeline) and C(destination).
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
  sample: [{id: 20261205T221500Z-3f9a0c2b7d1e, status: active, manifest_id: site.example,
            manifest_digest: "sha256:7d5f0b3c9e1a2d4f6b8a0c2e4f6a8b0d2f4a6c8e0b2d4f6a8c0e2a4b6d8f0a2c",
            owners: [{pipeline: site, destination: web}], created: "2026-12-05T22:15:00Z",
            built: "2026-12-05T22:15:02Z", activated: "2026-12-06T05:40:00Z", from: null}]
removed:
  description:
    - The releases removed after a forward switch because keep-N no longer keeps them (in check mode, those a run would
      remove); empty for a rollback or when nothing switches.
  returned: success, without O(fleet)
  type: list
  elements: str
  sample: [20261201T090000Z-0a1b2c3d4e5f]
window_seconds:
  description:
    - With O(fleet), the seconds from the start of the first destination's rename to the end of the last one's, the
      time during which the fleet serves two releases; V(null) in check mode or when nothing switched.
  returned: success, with O(fleet)
  type: float
  sample: 0.004211
destinations:
  description:
    - With O(fleet), one entry per destination, in the order of their ids.
  returned: success, with O(fleet)
  type: list
  elements: dict
  contains:
    id:
      description: The destination id.
      type: str
    bundle_path:
      description: Its rendered bundle path.
      type: str
    from:
      description: The release it held before; V(null) for none.
      type: str
    release:
      description: The release it holds after the run (in check mode, would hold).
      type: str
    rollback:
      description: Whether its switch returns to an older release.
      type: bool
    owners:
      description: As RV(owners), for this destination.
      type: list
      elements: str
    previous:
      description: As RV(previous), for this destination.
      type: str
    removed:
      description: As RV(removed), for this destination.
      type: list
      elements: str
    changed:
      description: Whether its link was switched (in check mode, would be).
      type: bool
    plan_digest:
      description: The digest a single-destination run of the same switch would report.
      type: str
  sample: [{id: web1, bundle_path: site, from: 20261205T221500Z-3f9a0c2b7d1e, release: 20261206T053000Z-0123456789ab,
            rollback: false, owners: [site/web1], previous: 20261205T221500Z-3f9a0c2b7d1e, removed: [], changed: true,
            plan_digest: "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"}]
plan_digest:
  description:
    - C(sha256:<64 hex>) over what this run does and relies on (bundle path, the release switched from and to, whether
      it is a rollback, the owners it affects), without the clock.
    - The same in check mode and in the real run that follows on the same destination; pass it as
      O(expect_plan_digest) to require exactly that switch.
    - With O(fleet), one digest for the fleet, over every destination's facts (each also in RV(destinations)).
  returned: always
  type: str
  sample: sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
changes:
  description:
    - One entry when the run switches (none when the release is already active).
  returned: always, without O(fleet)
  type: list
  elements: dict
  contains:
    release:
      description: The release switched to.
      type: str
    change:
      description: C(activate) for a newer release, C(rollback) for an older one.
      type: str
      choices: [activate, rollback]
  sample: [{release: 20261205T221500Z-3f9a0c2b7d1e, change: rollback}]
owners_count:
  description: How many owners RV(owners) names in all.
  returned: success, without O(fleet)
  type: int
  sample: 1
releases_count:
  description: How many releases the index records.
  returned: success, without O(fleet)
  type: int
  sample: 3
changes_count:
  description: How many entries RV(changes) has.
  returned: always, without O(fleet)
  type: int
  sample: 1
removed_count:
  description: How many entries RV(removed) has.
  returned: success, without O(fleet)
  type: int
  sample: 0
destinations_count:
  description: How many destinations RV(destinations) has.
  returned: success, with O(fleet)
  type: int
  sample: 1
truncated:
  description:
    - Each list of the result that O(result_limit) cut, as its name, and how many entries it leaves out. Empty when
      every list is whole.
  returned: success
  type: dict
  sample: {}
record_file:
  description: The absolute path of the O(record_file) written.
  returned: when O(record_file) is set
  type: str
  sample: /var/lib/distributor/records/site.web.release.jsonl
record_sha256:
  description: C(sha256:<64 hex>) of the bytes of the O(record_file) written.
  returned: when O(record_file) is set
  type: str
  sample: sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
"""

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.adapter import run_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.argspec import RELEASE, RESULT
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.fleet import release_operation


def main():
    run_module(dict(RELEASE, **RESULT), release_operation)


if __name__ == "__main__":
    main()
