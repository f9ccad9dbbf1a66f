# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks made before an SFTP connection is trusted: the storage settings and the server's host
key, looked up in known_hosts like OpenSSH does."""

from __future__ import annotations

import os
import posixpath

from ..errors import DistributorError
from ..vocabulary import HOST_KEY_POLICIES


class HostKeyPolicy:
    """What paramiko asks about a server key missing from known_hosts (duck-typed like
    paramiko.MissingHostKeyPolicy, so paramiko stays a lazy import)."""

    def __init__(self, storage):
        self.storage = storage

    def missing_host_key(self, client, hostname: str, key) -> None:
        storage = self.storage
        if storage.host_key_policy != "accept_new":
            raise DistributorError(
                "storage_error",
                "the host key of %s:%d (%s %s) is not in %s; add it there (for example "
                "`ssh-keyscan -p %d %s >> %s`) or set host_key_policy: accept_new to trust it on "
                "first use"
                % (
                    storage.host,
                    storage.port,
                    key.get_name(),
                    key.fingerprint,
                    storage.known_hosts_file or "~/.ssh/known_hosts",
                    storage.port,
                    storage.host,
                    storage.known_hosts_file or "~/.ssh/known_hosts",
                ),
            )
        client.get_host_keys().add(hostname, key.get_name(), key)
        if storage.known_hosts_file:
            remember_host_key(os.path.expanduser(storage.known_hosts_file), hostname, key)


def remember_host_key(path: str, hostname: str, key) -> None:
    """Append, as OpenSSH does, so comments and hashed entries in the file survive."""
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path, "a") as handle:
        handle.write("%s %s %s\n" % (hostname, key.get_name(), key.get_base64()))


def check_config(storage) -> None:
    if not storage.host:
        raise DistributorError("invalid_config", "storage.host is required for sftp storage")
    if not posixpath.isabs(storage.root):
        raise DistributorError("invalid_config", "storage.root %r must be an absolute remote path" % storage.root)
    if posixpath.normpath(storage.root) in ("/", "//"):
        raise DistributorError("invalid_config", "storage.root '/' is refused: publish into a directory of its own")
    if storage.host_key_policy not in HOST_KEY_POLICIES:
        raise DistributorError(
            "invalid_config",
            "storage.host_key_policy %r must be one of %s" % (storage.host_key_policy, ", ".join(HOST_KEY_POLICIES)),
        )


def check_known_hosts(path: str) -> None:
    """paramiko skips lines of key types it does not know but raises on a damaged line, and on
    a file that is not text, with no word of where: name the file and line instead."""
    from paramiko.hostkeys import HostKeyEntry, InvalidHostKey
    from paramiko.ssh_exception import SSHException

    try:
        with open(path, "rb") as handle:
            lines = handle.read().decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise DistributorError("invalid_config", "%s is not a known_hosts file: it is not UTF-8 text (byte %d)"
                               % (path, exc.start)) from None
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            HostKeyEntry.from_line(line, number)
        except SSHException:
            continue
        except (InvalidHostKey, ValueError, TypeError) as exc:
            raise DistributorError("invalid_config", "%s line %d is not a valid known_hosts entry (%s); fix or "
                                   "remove that line" % (path, number, type(exc).__name__)) from None
