#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, distributor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: distributor_manifest
short_description: Write the manifest.json of a source bundle
version_added: 0.1.0
description:
  - Hashes the files of a bundle directory and writes its C(manifest.json) (schema 1) with the
    digest distributor verifies when it publishes.
  - Idempotent; the file is rewritten only when its content changes.
  - Without O(created) the manifest is a function of the bundle, in check mode and in a run
    alike, so a C(--check) run predicts the real one and its RV(distributor.core.distributor_publish#module:plan_digest)
    can be approved with O(distributor.core.distributor_publish#module:expect_plan_digest).
options:
  path:
    description: The bundle directory.
    type: path
    required: true
  id:
    description: The source id, stable across versions of the same bundle.
    type: str
    required: true
  created:
    description:
      - RFC3339 creation time. Newer created times replace older ones at a destination.
      - When unset, an unchanged bundle (same O(id) and files) keeps the time its C(manifest.json) records;
        otherwise it is the newest modification time of the listed files, in UTC and whole seconds, and at
        least one second after the time the previous manifest of the same O(id) recorded.
      - Set it when the producer restores old modification times (C(rsync -a), C(tar -x), C(cp -p)) and has
        no previous C(manifest.json) to move forward from; see the configuration reference.
    type: str
  files:
    description: Paths to list, relative to I(path). Every regular file except C(manifest.json) when unset.
    type: list
    elements: str
extends_documentation_fragment:
  - distributor.core._distributor.ATTRIBUTES
  - distributor.core._distributor.RESULT
attributes:
  check_mode:
    description: Computes the manifest without writing it.
    support: full
  diff_mode:
    description: Not supported; the manifest is returned instead.
    support: none
notes:
  - Run it where the bundle is (the producer's side); the other modules verify every file against the manifest it writes.
seealso:
  - module: distributor.core.distributor_publish
  - module: distributor.core.distributor_reconcile_state
  - module: distributor.core.distributor_prune
  - name: distributor configuration reference
    description: Every pipeline and destination setting.
    link: https://github.com/distributor-project/distributor/blob/main/docs/config.md
  - name: distributor publishing guide
    description: Building the manifest in the same play as the publish.
    link: https://github.com/distributor-project/distributor/blob/main/docs/publishing.md#building-the-manifest-in-the-same-play
author:
  - distributor maintainers (@distributor)
requirements:
  - python >= 3.10
  - jsonschema >= 4.17
"""

EXAMPLES = r"""
- name: Describe the bundle; created is derived from it, the same under --check and in the run
  distributor.core.distributor_manifest:
    path: /srv/bundles/reports
    id: reports.example

- name: Publish it as just described (check mode, which wrote nothing, describes it again here and predicts the run)
  distributor.core.distributor_publish:
    source: /srv/bundles/reports
    manifest_id: reports.example
    pipeline:
      id: reports
    destination:
      id: archive
      storage:
        type: local
        root: /srv/www/reports

- name: Describe a bundle whose producer restores old modification times
  distributor.core.distributor_manifest:
    path: /srv/bundles/restored
    id: reports.example
    created: "2026-06-04T11:55:00Z"
"""

RETURN = r"""
reason:
  description:
    - On failure, the machine-readable cause, one of the following.
    - V(invalid_config) - O(created) is not an RFC3339 time.
    - V(invalid_manifest) - a listed path is not a clean relative path, is reserved, missing, or a symbolic link out of the bundle.
  returned: failure
  type: str
  sample: invalid_config
manifest:
  description:
    - The manifest as written (or as it would be written in check mode).
    - Its C(files) hold the first O(result_limit) entries (RV(truncated) says how many are left out), so that a bundle
      of 50,000 files keeps the result within what an AWX job event holds; RV(files_count) counts them all and the
      C(manifest.json) written (or O(record_file)) holds every one.
  returned: success
  type: dict
  sample: {schema_version: 1, id: reports.example, created: "2026-06-04T11:55:00Z",
           digest: "sha256:7d5f0b3c9e1a2d4f6b8a0c2e4f6a8b0d2f4a6c8e0b2d4f6a8c0e2a4b6d8f0a2c", files: []}
digest:
  description: The manifest's C(digest), over every file it lists.
  returned: success
  type: str
  sample: "sha256:7d5f0b3c9e1a2d4f6b8a0c2e4f6a8b0d2f4a6c8e0b2d4f6a8c0e2a4b6d8f0a2c"
  version_added: 0.2.0
files_count:
  description: How many files the manifest lists.
  returned: success
  type: int
  sample: 50000
  version_added: 0.2.0
truncated:
  description: Each list of the result that O(result_limit) cut (C(manifest.files)) and how many entries it left out.
  returned: success
  type: dict
  sample: {manifest.files: 49900}
  version_added: 0.2.0
record_file:
  description: The absolute path of the O(record_file) written.
  returned: when O(record_file) is set
  type: str
  sample: /var/lib/distributor/records/reports.manifest.jsonl
  version_added: 0.2.0
record_sha256:
  description: C(sha256:<64 hex>) of the bytes of the O(record_file) written.
  returned: when O(record_file) is set
  type: str
  sample: sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
  version_added: 0.2.0
path:
  description: Where C(manifest.json) is.
  returned: success
  type: str
  sample: /srv/bundles/reports/manifest.json
"""

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.adapter import run_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.argspec import RESULT
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.ensure_manifest import ensure_manifest


def main():
    argument_spec = dict(
        RESULT,
        path=dict(type="path", required=True),
        id=dict(type="str", required=True),
        created=dict(type="str"),
        files=dict(type="list", elements="str"),
    )
    run_module(
        argument_spec,
        lambda params, check_mode: ensure_manifest(
            params["path"], manifest_id=params["id"], created=params["created"], paths=params["files"],
            check_mode=check_mode,
        ),
    )


if __name__ == "__main__":
    main()
