# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Open the backend a destination's `storage.type` names.

Each backend's package is imported when that backend is opened, not before: a module run
through Ansible imports its code from the AnsiballZ zip, without bytecode, so every module
imported is compiled on every run, and a local publish has no use for the SFTP and S3 code
(about a sixth of the core's source). Ansible still packs every backend: its packer reads the
imports of function bodies too. The SDKs themselves (boto3, paramiko) are imported only when
their backend connects.
"""

from __future__ import annotations

import uuid

from ..errors import DistributorError
from .base import Storage
from .local.storage import LocalStorage


def new_token() -> str:
    """A fresh attempt token: names this run's staged files and journal entry."""
    return uuid.uuid4().hex[:12]


def open_storage(storage: dict, base: str, token: str) -> Storage:
    """The backend for a validated storage setting. The in-memory backend of the unit tests is
    not one of them: tests hand it to the core through the `opener` parameter instead."""
    kind = storage["type"]
    if kind == "local":
        return LocalStorage(storage["root"], base, token, storage)
    if kind == "sftp":
        from .sftp.storage import SftpStorage
        return SftpStorage(storage, base, token)
    if kind == "s3":
        from .s3.storage import S3Storage
        return S3Storage(storage, base, token)
    raise DistributorError("invalid_config", "storage.type %r is not one of local, sftp, s3" % (kind,))
