# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument specs shared by the modules: plain data, so the core stays free of Ansible imports.

Secrets are `no_log` here once, like amazon.aws does for its shared AWS options.
"""

from __future__ import annotations

from . import vocabulary
from .limits import RESULT_LIMIT

# How to reach one SSH server: SFTP storage and each of its jump hosts take the same options.
SSH_CONNECTION = dict(
    host=dict(type="str"),
    port=dict(type="int"),
    username=dict(type="str"),
    password=dict(type="str", no_log=True),
    private_key_file=dict(type="path"),
    known_hosts_file=dict(type="path"),
    known_hosts=dict(type="str"),
    host_key_policy=dict(type="str", choices=list(vocabulary.HOST_KEY_POLICIES)),
    connect_timeout=dict(type="float"),
)

STORAGE = dict(
    SSH_CONNECTION,
    type=dict(type="str", required=True, choices=list(vocabulary.STORAGE_TYPES)),
    root=dict(type="str"),
    jump_hosts=dict(type="list", elements="dict", options=dict(SSH_CONNECTION, host=dict(type="str", required=True))),
    require_private_directories=dict(type="bool"),
    trusted_owners=dict(type="list", elements="str"),
    bucket=dict(type="str"),
    prefix=dict(type="str"),
    region=dict(type="str", aliases=["aws_region"]),
    endpoint_url=dict(type="str", aliases=["aws_endpoint_url"]),
    profile=dict(type="str", aliases=["aws_profile"]),
    access_key=dict(type="str", no_log=False, aliases=["aws_access_key"]),
    secret_key=dict(type="str", no_log=True, aliases=["aws_secret_key"]),
    session_token=dict(type="str", no_log=True),
    file_mode=dict(type="str"),
    directory_mode=dict(type="str"),
    owner=dict(type="str"),
    group=dict(type="str"),
    acl=dict(type="str"),
    cache_control=dict(type="raw"),
    storage_class=dict(type="str"),
    server_side_encryption=dict(type="str", choices=list(vocabulary.SERVER_SIDE_ENCRYPTION)),
    sse_kms_key_id=dict(type="str", no_log=False),
    metadata=dict(type="dict"),
    content_types=dict(type="dict"),
    validate_certs=dict(type="bool"),
    ca_bundle=dict(type="path"),
)


def _mode(choices: tuple) -> dict:
    return dict(type="dict", options=dict(mode=dict(type="str", choices=list(choices))))


DESTINATION = dict(
    type="dict",
    required=True,
    options=dict(
        id=dict(type="str", required=True),
        storage=dict(type="dict", required=True, options=STORAGE),
        path=dict(type="str"),
        state=_mode(vocabulary.STATE_MODES),
        reconciliation=_mode(vocabulary.RECONCILIATION_MODES),
        transfer=dict(
            type="dict",
            options=dict(
                on_destination_newer=dict(type="str", choices=list(vocabulary.ON_DESTINATION_NEWER)),
                on_conflict=dict(type="str", choices=list(vocabulary.ON_CONFLICT)),
                max_deletes=dict(type="int"),
                allow_empty=dict(type="bool"),
            ),
        ),
        takeover=_mode(vocabulary.TAKEOVER_MODES),
        links=dict(type="dict", options=dict(
            base_url=dict(type="str"), primary=dict(type="list", elements="str"), invalidation_limit=dict(type="int"))),
        retention=dict(type="dict", options=dict(max_age=dict(type="str"), max_outputs=dict(type="int"))),
        lock=dict(type="dict", options=dict(expiry=dict(type="float"))),
        releases=dict(type="dict", options=dict(
            keep=dict(type="int"), activate=dict(type="bool"), convert=dict(type="bool"), preview_url=dict(type="str"),
            shared=dict(type="list", elements="str"), id=dict(type="str"), build=dict(type="str", choices=["changed", "always"]))),
    ),
)

PIPELINE = dict(
    type="dict",
    required=True,
    options=dict(
        id=dict(type="str", required=True),
        outputs=dict(
            type="list",
            elements="dict",
            options=dict(
                match=dict(type="str", required=True),
                transform=dict(type="str", default="copy", choices=list(vocabulary.TRANSFORMS)),
            ),
        ),
        markdown=dict(type="dict", options=dict(allow_raw_html=dict(type="bool", default=False),
                                                stylesheet=dict(type="str"), template=dict(type="path"),
                                                lang=dict(type="str", default="en"))),
        exclude=dict(type="list", elements="str"),
        destinations=dict(type="list", elements="str"),
    ),
)

# The options that fill a bundle path's placeholders without a bundle at hand.
SELECTOR = dict(
    created=dict(type="str"),
    source_id=dict(type="str"),
)

# distributor_publish's and distributor_state_info's look at the managed outputs themselves.
VERIFY = dict(type="str", default="none", choices=list(vocabulary.VERIFY_MODES))

# The options that select one existing managed root without a bundle at hand (reconcile, prune).
MANAGED_ROOT = dict(
    SELECTOR,
    pipeline_id=dict(type="str", required=True),
    destination=DESTINATION,
    lock_timeout=dict(type="float", default=60.0),
    expect_plan_digest=dict(type="str"),
)

# distributor_release: a managed root in release mode and the release its link is switched to.
# With `fleet`, several destinations switched together (each validated as a destination by the core).
RELEASE = dict(MANAGED_ROOT, release=dict(type="str", required=True), destination=dict(DESTINATION, required=False),
               fleet=dict(type="list", elements="dict"))

# Every module that returns per-file lists: how many entries each holds, and where the whole
# result goes (budget.py, record.py).
RESULT = dict(
    result_limit=dict(type="int", default=RESULT_LIMIT),
    record_file=dict(type="path"),
)
