# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every closed set of words a user writes in a playbook, defined once.

The argument spec and the JSON Schemas are built from these; the module documentation is checked
against the argument spec by ansible-test sanity, and docs/config.md against these by a unit
test, so a new choice cannot reach one of them and miss another.
"""

from __future__ import annotations

STORAGE_TYPES = ("local", "sftp", "s3")
# The two ways a destination root holds state: one owner, or many owners of disjoint paths.
SINGLE_OWNER = "single_owner"
SHARED_ROOT = "shared_root"
STATE_MODES = (SINGLE_OWNER, SHARED_ROOT)
RECONCILIATION_MODES = ("replace", "merge")
ON_DESTINATION_NEWER = ("skip", "replace")
ON_CONFLICT = ("fail", "replace")
TAKEOVER_MODES = ("none", "managed")
# How publish and state_info look at managed outputs at the destination (see drift.py).
VERIFY_MODES = ("none", "size", "sha256")
HOST_KEY_POLICIES = ("reject", "accept_new")
# The status of a release (releases.rules): what a user reads in distributor_state_info and asks
# distributor_release about.
RELEASE_STATUSES = ("staged", "active", "superseded", "failed", "rolled_back")
TRANSFORMS = ("copy", "markdown_to_html")
OUTPUT_KINDS = ("source", "generated")
SERVER_SIDE_ENCRYPTION = ("AES256", "aws:kms")
S3_ACLS = ("private", "public-read", "public-read-write", "authenticated-read", "aws-exec-read",
           "bucket-owner-read", "bucket-owner-full-control")
# The storage classes an S3 upload may ask for, as botocore 1.44 lists them (StorageClass): any
# other word fails every upload, so it is refused with the settings, before a plan is made.
S3_STORAGE_CLASSES = ("STANDARD", "REDUCED_REDUNDANCY", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER",
                      "DEEP_ARCHIVE", "OUTPOSTS", "GLACIER_IR", "SNOW", "EXPRESS_ONEZONE", "FSX_OPENZFS", "FSX_ONTAP",
                      "AWS_BACKUP_WARM", "AWS_BACKUP_LOW_COST_WARM")
