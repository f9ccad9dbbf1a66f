# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An S3 destination that cannot be used at all says why, against moto's real S3 API: a missing
bucket says the bucket does not exist (not "cannot create lock"), missing credentials say where
they were looked for, and refused credentials also say where the ones S3 refused came from.
The first request of a run is the lock's PUT, of a check the state's GET: both are covered."""

from __future__ import annotations

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

from builders import NOW, write_bundle
from services import TEST_REGION, start_s3

PIPELINE = {"id": "reports"}
SECRET = "refused-secret-do-not-print"
UNKNOWN_KEY = "AKIAIOSFODNN7EXAMPLE"


@pytest.fixture(scope="module")
def checking_server():
    """moto refusing every access key it does not know (it knows none)."""
    server = start_s3(check_credentials=True)
    yield server
    server.stop()


@pytest.fixture
def no_aws_environment(monkeypatch, tmp_path):
    """Nothing of this machine's AWS set-up reaches boto3: no variables, empty credential and
    config files, no instance metadata (which boto3 would otherwise wait for)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE",
                 "AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")


def failure(tmp_path, storage: dict, check_mode: bool) -> str:
    bundle = write_bundle(tmp_path / "bundle", {"index.html": b"<p>x</p>"})
    destination = {"id": "web", "storage": storage, "path": "site"}
    with pytest.raises(DistributorError) as caught:
        publish(bundle, PIPELINE, destination, check_mode=check_mode, now=NOW)
    assert caught.value.reason == "storage_error", caught.value.message
    return caught.value.message


def without_keys(storage: dict, **extra) -> dict:
    return dict({key: value for key, value in storage.items() if key not in ("access_key", "secret_key")}, **extra)


@pytest.mark.parametrize("check_mode", [False, True], ids=["run", "check"])
def test_a_missing_bucket_says_the_bucket_does_not_exist_where_it_was_looked_for(s3_server, tmp_path, check_mode):
    message = failure(tmp_path, s3_server.storage("reports-archive-typo", prefix="www"), check_mode)
    assert message.startswith("bucket 'reports-archive-typo' does not exist at %s: create it, or correct storage.bucket"
                              % s3_server.endpoint_url), message
    first_request = "read s3://reports-archive-typo/www/site/.distributor.json" if check_mode else (
        "create lock s3://reports-archive-typo/www/site/.distributor.lock")
    assert message.endswith("S3 answered NoSuchBucket when asked to %s" % first_request)


@pytest.mark.parametrize("check_mode", [False, True], ids=["run", "check"])
def test_no_credentials_say_where_boto3_looked_for_them(s3_server, tmp_path, no_aws_environment, check_mode):
    message = failure(tmp_path, without_keys(s3_server.storage(s3_server.create_bucket())), check_mode)
    assert message.startswith("no usable AWS credentials to "), message
    for place in ("the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; AWS_PROFILE)",
                  "the shared credentials file (~/.aws/credentials, or AWS_SHARED_CREDENTIALS_FILE)",
                  "the config file (~/.aws/config, or AWS_CONFIG_FILE)", "container credentials (ECS or EKS)",
                  "the EC2 instance role (instance metadata)", "on the host that runs the module"):
        assert place in message


def test_a_profile_that_does_not_exist_is_named_with_the_files_it_was_looked_for_in(s3_server, tmp_path, no_aws_environment):
    message = failure(tmp_path, without_keys(s3_server.storage(s3_server.create_bucket()), profile="publisher"), False)
    assert message.startswith("no usable AWS credentials to connect to "), message
    assert "The config profile (publisher) could not be found" in message
    assert "the profile 'publisher' alone (storage.profile), in the shared credentials file (~/.aws/credentials" in message


@pytest.mark.parametrize("check_mode", [False, True], ids=["run", "check"])
def test_credentials_s3_refuses_say_where_they_came_from_environment(checking_server, tmp_path, no_aws_environment,
                                                                     monkeypatch, check_mode):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", UNKNOWN_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    message = failure(tmp_path, without_keys(checking_server.storage("reports-archive")), check_mode)
    assert message.startswith("S3 refused the credentials (InvalidAccessKeyId) when asked to "), message
    assert "the credentials came from the environment (AWS_ACCESS_KEY_ID)" in message
    assert "distributor looks for them in this order" in message and SECRET not in message


def test_credentials_s3_refuses_say_where_they_came_from_explicit_keys(checking_server, tmp_path, no_aws_environment):
    storage = checking_server.storage("reports-archive", access_key=UNKNOWN_KEY, secret_key=SECRET, region=TEST_REGION)
    message = failure(tmp_path, storage, False)
    assert message.startswith("S3 refused the credentials (InvalidAccessKeyId) when asked to create lock "), message
    assert "the credentials came from storage.access_key and storage.secret_key" in message
    assert "storage.access_key, storage.secret_key and storage.session_token alone" in message and SECRET not in message
