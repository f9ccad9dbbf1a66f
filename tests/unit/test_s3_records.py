# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Records are never served: on S3 the state and the journal are written with the bucket's
default ACL and none of the object settings meant for outputs, against moto's S3 server."""

from __future__ import annotations

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage

OUTPUT_SETTINGS = {"acl": "public-read", "storage_class": "STANDARD_IA", "cache_control": "max-age=60",
                   "metadata": {"team": "docs"}, "server_side_encryption": "AES256"}


def public(client, bucket, key) -> bool:
    grants = client.get_object_acl(Bucket=bucket, Key=key)["Grants"]
    return any(g["Grantee"].get("URI", "").endswith(("/global/AllUsers", "/global/AuthenticatedUsers")) for g in grants)


@pytest.mark.parametrize("record", [STATE_NAME, JOURNAL_NAME])
def test_a_record_gets_neither_the_outputs_acl_nor_their_object_settings_but_their_encryption(s3_server, record):
    bucket = s3_server.create_bucket()
    storage = open_storage(dict(s3_server.storage(bucket), **OUTPUT_SETTINGS), "site", "t1")
    storage.write_bytes("index.html", b"<p>served</p>")
    storage.write_bytes(record, b"{}")
    client = s3_server.client()
    assert public(client, bucket, "site/index.html") and not public(client, bucket, "site/" + record)
    head = client.head_object(Bucket=bucket, Key="site/" + record)
    assert (head["ContentType"], head.get("StorageClass", "STANDARD"), head.get("CacheControl"), head["Metadata"],
            head["ServerSideEncryption"]) == ("application/json", "STANDARD", None, {}, "AES256")
