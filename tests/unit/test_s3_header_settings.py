# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""S3 settings are validated before the plan: what S3 would refuse in a header (control
characters, letters outside ASCII, a bad metadata key, too much metadata) and an unknown storage
class are invalid_config naming the setting, in check mode too, so no plan digest is ever made
for a run that could only fail."""

from __future__ import annotations

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.config import parse_destination
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.vocabulary import S3_STORAGE_CLASSES

from builders import write_bundle

S3 = {"type": "s3", "bucket": "site"}
KMS = {"server_side_encryption": "aws:kms"}

REFUSED = [
    ({"metadata": {"team": "docs\r\nX-Injected: 1"}}, 'storage.metadata["team"] "docs\\r\\nX-Injected: 1"'),
    ({"metadata": {"team": "caf\u00e9"}}, 'storage.metadata["team"] "caf\\u00e9"'),
    ({"metadata": {"team": "a\tb"}}, 'storage.metadata["team"] "a\\tb"'),
    ({"metadata": {"team": "\x1b[2K"}}, 'storage.metadata["team"] "\\u001b[2K"'),
    ({"metadata": {"caf\u00e9": "x"}}, 'storage.metadata key "caf\\u00e9"'),
    ({"metadata": {"two words": "x"}}, 'storage.metadata key "two words"'),
    ({"metadata": {"k": "v" * 2048}}, "storage.metadata is 2049 bytes (keys and values), over the 2048 bytes"),
    ({"cache_control": "max-age=60\n"}, 'storage.cache_control "max-age=60\\n"'),
    ({"cache_control": [{"match": "**", "value": "no-cache"}, {"match": "*.html", "value": "\u00e9"}]},
     'storage.cache_control[1].value "\\u00e9"'),
    ({"content_types": {".atom": "application/atom+xml\r\n"}}, 'storage.content_types[".atom"]'),
    (dict(KMS, sse_kms_key_id="alias/www\n"), 'storage.sse_kms_key_id "alias/www\\n"'),
    (dict(KMS, sse_kms_key_id="alias/my key"), 'storage.sse_kms_key_id "alias/my key"'),
    ({"storage_class": "STANDARD-IA"}, 'storage_class must be "STANDARD" or'),
    ({"storage_class": "standard"}, 'not "standard"'),
]


@pytest.mark.parametrize("settings, words", REFUSED)
def test_a_header_s3_would_refuse_is_invalid_config_naming_the_setting(settings, words):
    with pytest.raises(DistributorError) as caught:
        parse_destination({"id": "d", "storage": dict(S3, **settings)})
    assert caught.value.reason == "invalid_config"
    assert words in caught.value.message


@pytest.mark.parametrize("settings", [
    {"metadata": {"team": "docs", "build-id": 42, "public": True, "x_y.z": "a b ~!@#$%^&*()"}},
    {"cache_control": "public, max-age=31536000, immutable"},
    {"content_types": {".atom": "application/atom+xml; charset=utf-8"}},
    dict(KMS, sse_kms_key_id="arn:aws:kms:eu-central-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"),
    {"metadata": {"k": "v" * 2047}},
] + [{"storage_class": name} for name in S3_STORAGE_CLASSES])
def test_headers_s3_takes_are_accepted(settings):
    parse_destination({"id": "d", "storage": dict(S3, **settings)})


def test_check_mode_refuses_them_before_any_plan_and_touches_no_storage(tmp_path):
    source = write_bundle(tmp_path / "b", {"a.txt": b"a\n"})

    def opener(*_args):
        raise AssertionError("storage was opened")

    with pytest.raises(DistributorError) as caught:
        publish(source, {"id": "reports"}, {"id": "d", "storage": dict(S3, metadata={"team": "a\nb"})},
                check_mode=True, opener=opener)
    assert caught.value.reason == "invalid_config" and "storage.metadata" in caught.value.message
