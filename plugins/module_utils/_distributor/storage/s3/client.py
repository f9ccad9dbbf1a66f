# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The boto3 session and client of one S3 storage: where the credentials come from, how TLS is
checked, and two settings for a publish's many small, latency-bound requests: a small body goes
with its request (no wait for a 100 Continue) and a listing's times are read by datetime."""

from __future__ import annotations

import os
from contextlib import suppress
from datetime import datetime
from functools import partial
from typing import Callable


def session_for(boto3, storage: dict):
    """Explicit keys win, then a named profile, then the standard AWS chain (environment,
    shared files, instance and container roles), as the aws command would. The session is this
    storage's own, so its parsers' fast timestamps (_timestamp) reach no other client."""
    import botocore.session
    from botocore.utils import parse_timestamp
    core = botocore.session.get_session()
    core.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=partial(_timestamp, parse_timestamp))
    region = storage.get("region") or os.environ.get("AWS_REGION") or None
    if storage.get("access_key"):
        return boto3.session.Session(
            aws_access_key_id=storage["access_key"],
            aws_secret_access_key=storage.get("secret_key"),
            aws_session_token=storage.get("session_token"),
            region_name=region,
            botocore_session=core,
        )
    return boto3.session.Session(profile_name=storage.get("profile") or None, region_name=region, botocore_session=core)


def client_for(session, config, storage: dict, small_body: int):
    """The session's S3 client with botocore's `config`, sending bodies of up to `small_body`
    bytes at once (_send_at_once)."""
    client = session.client("s3", endpoint_url=storage.get("endpoint_url") or None, config=config, verify=_verify(storage))
    client.meta.events.register_last("before-call.s3", partial(_send_at_once, small_body))
    return client


def _send_at_once(small_body: int, params: dict, **_kwargs) -> None:
    """botocore asks for a `100 Continue` before sending a PUT's body (Expect: 100-continue),
    which costs a round trip more per PUT: the lock, each record and each small output. A body of
    up to `small_body` costs less to send for nothing, should S3 refuse the request, than that wait
    costs every time; a larger one still asks first, so a refusal (a wrong region's redirect, say)
    comes before megabytes are sent."""
    from botocore.utils import determine_content_length  # botocore is loaded: this is its client's hook
    headers = params.get("headers") or {}
    if "Expect" in headers and (determine_content_length(params.get("body")) or 0) <= small_body:
        del headers["Expect"]


def _timestamp(general: Callable[[str], datetime], value: str) -> datetime:
    """A listing's LastModified, `2026-12-06T08:41:12.000Z`, read by datetime itself; anything
    else by botocore's `general` parser. That one tries format after format through dateutil,
    50 µs a key: a fifth of the client's time for a listing of 1,000 keys, which nobody reads."""
    if isinstance(value, str) and value.endswith("Z"):
        with suppress(ValueError):
            return datetime.fromisoformat(value[:-1] + "+00:00")
    return general(value)


def _verify(storage: dict):
    """botocore's `verify`: a CA bundle path, False to skip TLS verification, or None (default)."""
    if storage.get("validate_certs") is False:
        return False
    return os.path.expanduser(storage["ca_bundle"]) if storage.get("ca_bundle") else None
