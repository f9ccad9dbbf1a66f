# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host keys of the SSH servers on the way to SFTP storage (the server itself and each jump host):
looked up like OpenSSH does, from a known_hosts file or from known_hosts lines given as a value
(an AWX credential has no file to point at), and refused with the line an operator would add.
"""

from __future__ import annotations

import os

from ...errors import DistributorError

SYSTEM_KNOWN_HOSTS = "~/.ssh/known_hosts"


def trust_known_hosts(client, endpoint) -> None:
    """Load what `endpoint` trusts into a paramiko SSHClient. Its own file and lines when it has
    either; otherwise the user's ~/.ssh/known_hosts, as the ssh command reads it."""
    if endpoint.known_hosts_file:
        path = os.path.expanduser(endpoint.known_hosts_file)
        if os.path.exists(path):
            check_known_hosts(path)
            client.get_host_keys().load(path)
    if endpoint.known_hosts:
        add_known_hosts(client.get_host_keys(), endpoint.known_hosts, "%s.known_hosts" % endpoint.where)
    if not endpoint.known_hosts_file and not endpoint.known_hosts:
        system = os.path.expanduser(SYSTEM_KNOWN_HOSTS)
        if os.path.exists(system):
            check_known_hosts(system)
        client.load_system_host_keys()
    client.set_missing_host_key_policy(HostKeyPolicy(endpoint))


def add_known_hosts(host_keys, text: str, where: str) -> None:
    """known_hosts lines given as a value, added as paramiko's HostKeys.load adds a file's: a
    line of a key type paramiko does not know is skipped, a damaged one is refused."""
    from paramiko.hostkeys import HostKeyEntry

    for number, line in known_hosts_entries(text.splitlines(), where):
        entry = HostKeyEntry.from_line(line, number)
        if entry is not None:
            for name in entry.hostnames:
                host_keys.add(name, entry.key.get_name(), entry.key)


def check_known_hosts(path: str) -> None:
    """paramiko skips lines of key types it does not know but raises on a damaged line, and on
    a file that is not text, with no word of where: name the file and line instead."""
    try:
        with open(path, "rb") as handle:
            lines = handle.read().decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise DistributorError("invalid_config", "%s is not a known_hosts file: it is not UTF-8 text (byte %d)"
                               % (path, exc.start)) from None
    known_hosts_entries(lines, path)


def known_hosts_entries(lines, where: str) -> list[tuple[int, str]]:
    """(line number, line) of each entry paramiko can use; a line paramiko would fail on is
    invalid_config naming `where` and the line."""
    from paramiko.hostkeys import HostKeyEntry, InvalidHostKey
    from paramiko.ssh_exception import SSHException

    entries = []
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
                                   "remove that line" % (where, number, type(exc).__name__)) from None
        entries.append((number, line))
    return entries


class HostKeyPolicy:
    """What paramiko asks about a server key missing from known_hosts (duck-typed like
    paramiko.MissingHostKeyPolicy, so paramiko stays a lazy import)."""

    def __init__(self, endpoint):
        self.endpoint = endpoint

    def missing_host_key(self, client, hostname: str, key) -> None:
        """Trust on first use only when host_key_policy says so; otherwise refused, with the line to add."""
        endpoint = self.endpoint
        if endpoint.host_key_policy != "accept_new":
            raise DistributorError(
                "storage_error",
                "the host key of %s (%s) is not in %s; once that fingerprint is checked, add this line there: "
                "`%s`%s, or set host_key_policy: accept_new to trust it on first use"
                % (endpoint.name, fingerprint(key), key_store(endpoint), known_hosts_line(hostname, key),
                   keyscan_hint(endpoint)),
            )
        client.get_host_keys().add(hostname, key.get_name(), key)
        if endpoint.known_hosts_file:
            remember_host_key(os.path.expanduser(endpoint.known_hosts_file), hostname, key)


def changed_host_key(endpoint, found, recorded) -> DistributorError:
    """A key other than the recorded one is refused whatever the policy: it is what a machine in
    the middle would show. The message says what to replace, should the change be real."""
    return DistributorError(
        "storage_error",
        "the host key of %s (%s) does not match the one recorded in %s (%s): the server's key changed, or "
        "something between is answering for it. If the key really changed, replace its line there with `%s` once "
        "that fingerprint is checked%s"
        % (endpoint.name, fingerprint(found), key_store(endpoint), fingerprint(recorded),
           known_hosts_line(lookup_name(endpoint), found), keyscan_hint(endpoint)),
    )


def lookup_name(endpoint) -> str:
    """The name known_hosts files record a server under, as OpenSSH writes it."""
    return endpoint.host if endpoint.port == 22 else "[%s]:%d" % (endpoint.host, endpoint.port)


def known_hosts_line(hostname: str, key) -> str:
    """The line `ssh-keyscan` prints for this key."""
    return "%s %s %s" % (hostname, key.get_name(), key.get_base64())


def keyscan_hint(endpoint) -> str:
    """Where to get the key independently: ssh-keyscan, run where the server is reachable from."""
    command = "ssh-keyscan -p %d %s" % (endpoint.port, endpoint.host)
    if endpoint.via:
        return " (`%s` run on %s prints it)" % (command, endpoint.via)
    return " (`%s` prints it)" % command


def fingerprint(key) -> str:
    """The key's type and SHA256 fingerprint, as `ssh-keygen -lf` shows them for comparison."""
    return "%s %s" % (key.get_name(), key.fingerprint)


def key_store(endpoint) -> str:
    """Where this endpoint's host keys are looked up, as the operator wrote it."""
    stores = []
    if endpoint.known_hosts_file:
        stores.append(endpoint.known_hosts_file)
    if endpoint.known_hosts:
        stores.append("%s.known_hosts" % endpoint.where)
    return " or ".join(stores) or SYSTEM_KNOWN_HOSTS


def remember_host_key(path: str, hostname: str, key) -> None:
    """Append, as OpenSSH does, so comments and hashed entries in the file survive."""
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path, "a") as handle:
        handle.write(known_hosts_line(hostname, key) + "\n")
