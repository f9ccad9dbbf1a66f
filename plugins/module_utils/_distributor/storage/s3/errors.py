# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an operator reads when S3 cannot be used at all: the bucket is missing, no credentials
were found, or S3 refused the ones found. botocore words these as the request that met them
("cannot create lock ...: Unable to locate credentials"), which sends people to the wrong place;
here they say what is wrong, where distributor looked and what to change.
s3.S3Storage._errors, the one place a botocore error becomes a reason, asks `explain`.
"""

from __future__ import annotations

from typing import Callable

BUCKET_MISSING = ("NoSuchBucket",)
# Raised by botocore before any request, when it finds no usable credentials.
CREDENTIALS_MISSING = ("NoCredentialsError", "PartialCredentialsError", "ProfileNotFound", "CredentialRetrievalError",
                       "NoAuthTokenError", "TokenRetrievalError", "SSOError", "UnauthorizedSSOTokenError")
# Answered by S3 to credentials it does not accept (unknown key, wrong secret, expired session).
CREDENTIALS_REFUSED = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken",
                       "TokenRefreshRequired")
ACCESS_DENIED = ("AccessDenied", "AllAccessDisabled", "403")  # "403": a HEAD, which has no body to say more

# botocore's name of each credential provider (Credentials.method) as a person knows the place.
SOURCES = {
    "explicit": "storage.access_key and storage.secret_key",
    "env": "the environment (AWS_ACCESS_KEY_ID)",
    "shared-credentials-file": "the shared credentials file (~/.aws/credentials)",
    "config-file": "the AWS config file (~/.aws/config)",
    "assume-role": "a role assumed through the profile's role_arn",
    "assume-role-with-web-identity": "a web identity token (AWS_WEB_IDENTITY_TOKEN_FILE)",
    "sso": "IAM Identity Center (sso_session in the profile)",
    "custom-process": "the profile's credential_process",
    "container-role": "the container's role (ECS or EKS credentials endpoint)",
    "iam-role": "the EC2 instance role (instance metadata)",
    "boto-config": "a boto2 config file (/etc/boto.cfg, ~/.boto)",
}


def explain(exc: Exception, action: str, location: str, storage: dict, endpoint: str | None,
            source: Callable[[], str | None]) -> str | None:
    """The message for a missing bucket or a credential failure, None for every other error.
    `source()` names the provider of the credentials in use; asked only when S3 refused them."""
    code = (getattr(exc, "response", None) or {}).get("Error", {}).get("Code") or type(exc).__name__
    bucket = storage.get("bucket")
    if code in BUCKET_MISSING:
        return ("bucket '%s' does not exist%s: create it, or correct storage.bucket (or storage.endpoint_url, if "
                "the bucket is served elsewhere). S3 answered %s when asked to %s %s"
                % (bucket, " at " + endpoint if endpoint else "", code, action, location))
    if code in CREDENTIALS_MISSING:
        return "no usable AWS credentials to %s %s (%s). distributor looked for them in %s" % (
            action, location, exc, looked_in(storage))
    if code in CREDENTIALS_REFUSED + ACCESS_DENIED:
        refused = "refused the credentials" if code in CREDENTIALS_REFUSED else "denied access"
        where = named(source())
        return ("S3 %s (%s) when asked to %s %s; the credentials came from %s. distributor looks for them in %s"
                % (refused, code, action, location, where, looked_in(storage)))
    return None


def named(method: str | None) -> str:
    """A provider botocore may add later is still named, by its own word."""
    return SOURCES.get(method or "", "boto3's provider %r" % method if method else "no provider boto3 could name")


def looked_in(storage: dict) -> str:
    """Where credentials are looked for, as this destination is configured (first found wins),
    on the host that runs the module: explicit keys alone, else the profile alone, else the
    chain boto3 documents (environment, assumed roles, IAM Identity Center, files, container,
    instance role)."""
    if storage.get("access_key"):
        return "storage.access_key, storage.secret_key and storage.session_token alone (given, so nothing else is asked)"
    files = ("the shared credentials file (~/.aws/credentials, or AWS_SHARED_CREDENTIALS_FILE) and the config file "
             "(~/.aws/config, or AWS_CONFIG_FILE)")
    if storage.get("profile"):
        return "the profile '%s' alone (storage.profile), in %s, on the host that runs the module" % (storage["profile"], files)
    return ("this order, on the host that runs the module (neither storage.access_key nor storage.profile is set): "
            "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; AWS_PROFILE), "
            "assume-role and web identity settings (AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE), IAM Identity Center, "
            "%s, container credentials (ECS or EKS), then the EC2 instance role (instance metadata)" % files)
