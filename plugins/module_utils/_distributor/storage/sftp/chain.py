# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The way to SFTP storage: its SSH server, reached directly or through `jump_hosts`.

Each jump host gets an SSH connection of its own, host key checked and credentials used exactly
as the server's are; the next connection runs inside a `direct-tcpip` channel of the one before
(what OpenSSH's ProxyJump does, and Fabric's `gateway`), all in this process: no ssh binary and no
ssh config file are needed. A handshake costs far more than the requests of a publish, so one
chain serves the whole run, and it is closed from the server back to the first jump host.
"""

from __future__ import annotations

import getpass
import os
import socket
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from ...errors import DistributorError
from ...vocabulary import HOST_KEY_POLICIES
from ..redaction import mentions_secret, redact
from .host_keys import changed_host_key, trust_known_hosts

CONNECT_TIMEOUT = 30.0
AEAD_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")
# RFC 4254 5.1: the reason a server gives for refusing to open a channel.
ADMINISTRATIVELY_PROHIBITED = 1
# The keys paramiko's SSHClient looks for when told to, as the ssh command does.
DEFAULT_KEYS = ("~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ed25519")
# paramiko's words for a handshake that did not finish in time, and ours.
UNFINISHED = {"Error reading SSH protocol banner": "no SSH protocol banner came (is it an SSH server?)",
              "No existing session": "the SSH handshake did not finish"}


@dataclass(frozen=True)
class Endpoint:
    """One SSH server on the way to the files: a jump host or the SFTP server itself, which take
    the same settings. `name` is how messages call it, `where` where its settings are written,
    `via` the endpoint it is reached through (None: directly)."""

    host: str
    port: int
    username: str
    known_hosts_file: str | None
    known_hosts: str | None
    host_key_policy: str
    connect_timeout: float
    name: str
    where: str
    via: str | None
    password: str | None = field(default=None, repr=False)
    private_key_file: str | None = None


def endpoints(storage: dict) -> tuple[Endpoint, ...]:
    """The jump hosts in the order they are crossed, then the SFTP server."""
    found: list[Endpoint] = []
    for index, hop in enumerate(storage.get("jump_hosts") or ()):
        port = _port(hop)
        found.append(_endpoint(hop, "jump host %d (%s:%d)" % (index + 1, hop.get("host") or "", port),
                               "storage.jump_hosts[%d]" % index, found[-1].name if found else None))
    username = storage.get("username") or getpass.getuser()
    name = "sftp://%s@%s:%d" % (username, storage.get("host") or "", _port(storage))
    return tuple(found) + (_endpoint(storage, name, "storage", found[-1].name if found else None),)


def _port(settings: dict) -> int:
    return int(settings.get("port") or 22)


def _endpoint(settings: dict, name: str, where: str, via: str | None) -> Endpoint:
    timeout = settings.get("connect_timeout")
    return Endpoint(
        host=settings.get("host") or "",
        port=_port(settings),
        username=settings.get("username") or getpass.getuser(),
        known_hosts_file=settings.get("known_hosts_file"),
        known_hosts=settings.get("known_hosts"),
        host_key_policy=settings.get("host_key_policy") or "reject",
        connect_timeout=float(CONNECT_TIMEOUT if timeout is None else timeout),
        name=name,
        where=where,
        via=via,
        password=settings.get("password"),
        private_key_file=settings.get("private_key_file"),
    )


def check_endpoints(found) -> None:
    """Settings refused before any connection is made, so a bad one costs no handshake."""
    for endpoint in found:
        if not endpoint.host:
            raise DistributorError("invalid_config", "%s.host is required for sftp storage" % endpoint.where)
        if endpoint.host_key_policy not in HOST_KEY_POLICIES:
            raise DistributorError("invalid_config", "%s.host_key_policy %r must be one of %s" % (
                endpoint.where, endpoint.host_key_policy, ", ".join(HOST_KEY_POLICIES)))
        if endpoint.connect_timeout <= 0:
            raise DistributorError("invalid_config", "%s.connect_timeout must be a number of seconds above 0"
                                   % endpoint.where)


class Chain:
    """The SSH connections of one run, first jump host first. `connect` either returns the SFTP
    server's client with every connection open, or raises with none left open."""

    def __init__(self, paramiko, found):
        self._paramiko = paramiko
        self._endpoints = tuple(found)
        self._secrets = [endpoint.password for endpoint in found]
        self.clients: list = []

    def connect(self):
        """paramiko's SSHClient for the SFTP server, through every jump host."""
        try:
            for endpoint in self._endpoints:
                client = self._paramiko.SSHClient()
                trust_known_hosts(client, endpoint)
                sock = self._forwarded(endpoint) if self.clients else None
                self.clients.append(client)
                with self._failures(endpoint):
                    if sock is None:
                        sock = Prompt(socket.create_connection((endpoint.host, endpoint.port), endpoint.connect_timeout))
                    try:
                        client.connect(**self._options(endpoint, sock))
                    except BaseException:
                        sock.close()  # paramiko leaves open a socket it was handed
                        raise
        except BaseException:
            self.close()
            raise
        return self.clients[-1]

    def close(self) -> None:
        """The SFTP server's connection first, then each jump host's back to the first, so each
        closes its channel through a connection that is still open."""
        while self.clients:
            self.clients.pop().close()

    def redact(self, text: str) -> str:
        """A message of ours must never be the first to print a password."""
        return redact(text, self._secrets)

    def mentions_secret(self, exc: BaseException) -> bool:
        """Whether `exc` may not travel on as a cause (see base.mentions_secret)."""
        return mentions_secret(exc, self._secrets)

    # -- one hop ----------------------------------------------------------------------------

    def _forwarded(self, endpoint: Endpoint):
        """A `direct-tcpip` channel to `endpoint` from the jump host before it: the socket of the
        next connection."""
        transport = self.clients[-1].get_transport()
        try:
            return transport.open_channel("direct-tcpip", dest_addr=(endpoint.host, endpoint.port), src_addr=("", 0),
                                          timeout=endpoint.connect_timeout)
        except self._paramiko.ChannelException as exc:
            raise self._error(_refused_forward(endpoint, exc)) from self._kept(exc)
        except (OSError, EOFError, self._paramiko.SSHException) as exc:
            raise self._error("%s could not open a connection to %s: %s" % (
                endpoint.via, endpoint.name, _waited(exc, endpoint))) from self._kept(exc)

    def _options(self, endpoint: Endpoint, sock) -> dict:
        """Explicit credentials are used alone; without any, ssh-agent and ~/.ssh keys are
        tried, as the ssh command would. Every wait is bounded by the endpoint's connect_timeout."""
        explicit = bool(endpoint.password or endpoint.private_key_file)
        return {
            "hostname": endpoint.host,
            "port": endpoint.port,
            "username": endpoint.username,
            "password": endpoint.password or None,
            "key_filename": os.path.expanduser(endpoint.private_key_file) if endpoint.private_key_file else None,
            "look_for_keys": not explicit,
            "allow_agent": not explicit,
            "sock": sock,
            "timeout": endpoint.connect_timeout,
            "banner_timeout": endpoint.connect_timeout,
            "auth_timeout": endpoint.connect_timeout,
            "transport_factory": self._transport,
        }

    def _transport(self, sock, **options):
        """paramiko offers AES-CTR with a separate HMAC first; AES-GCM authenticates as it
        encrypts, which saves CPU on every packet of its pure-Python packet layer, and a
        publish of small files is bound by that CPU (twice over through a jump host, whose
        connection carries the next one's packets). So GCM is offered first; the server's own
        cipher list still decides, and the other ciphers stay on offer."""
        transport = self._paramiko.Transport(sock, **options)
        security = transport.get_security_options()
        offered = [name for name in AEAD_CIPHERS if name in security.ciphers]
        security.ciphers = tuple(offered) + tuple(name for name in security.ciphers if name not in offered)
        return transport

    @contextmanager
    def _failures(self, endpoint: Endpoint) -> Iterator[None]:
        """paramiko's and the socket's errors of connecting to `endpoint`, as storage_error naming it."""
        paramiko = self._paramiko
        try:
            yield
        except paramiko.BadHostKeyException as exc:
            raise changed_host_key(endpoint, exc.key, exc.expected_key) from None
        except paramiko.AuthenticationException as exc:
            raise self._error(_login_failed(endpoint, exc)) from self._kept(exc)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise self._error("cannot connect to %s: %s" % (endpoint.name, _waited(exc, endpoint))) from self._kept(exc)

    def _error(self, message: str) -> DistributorError:
        return DistributorError("storage_error", self.redact(message))

    def _kept(self, exc: BaseException) -> BaseException | None:
        """The cause our error may carry: none when it quotes a password, which a traceback would print."""
        return None if self.mentions_secret(exc) else exc


class Prompt:
    """The TCP connection to the first server, acknowledging what it receives at once.

    An sshd relaying a forwarded connection (a jump host) sends each reply as it comes, in small
    segments, and with Nagle's algorithm holds the next until the last is acknowledged, while
    Linux delays acknowledgements up to 40 ms hoping to carry them on data: a publish of small
    files through a jump host spent most of its time in those waits (issue #33). Linux leaves
    TCP_QUICKACK mode on its own, so it is asked for before every read; and requests go out
    without Nagle's wait (TCP_NODELAY), which paramiko already sends a packet at a time."""

    def __init__(self, sock):
        self._sock = sock
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._quickack = getattr(socket, "TCP_QUICKACK", None)

    def recv(self, size: int) -> bytes:
        """One read, acknowledged as soon as it arrives."""
        if self._quickack is not None:
            self._sock.setsockopt(socket.IPPROTO_TCP, self._quickack, 1)
        return self._sock.recv(size)

    def __getattr__(self, name):
        return getattr(self._sock, name)


def _refused_forward(endpoint: Endpoint, exc) -> str:
    """A jump host refuses a forward by its sshd's settings (administratively prohibited), or
    cannot reach the next host itself (any other reason)."""
    if exc.code == ADMINISTRATIVELY_PROHIBITED:
        return ("%s refused to forward a connection to %s (administratively prohibited): its sshd must allow TCP "
                "forwarding to %s:%d for the user distributor logs in as (AllowTcpForwarding yes or local, no "
                "DisableForwarding, and PermitOpen, if set, must list it)" % (endpoint.via, endpoint.name, endpoint.host,
                                                                              endpoint.port))
    return ("%s could not open a connection to %s (%s): the host cannot be reached from there, its name does not "
            "resolve there, or nothing listens on port %d" % (endpoint.via, endpoint.name, exc.text, endpoint.port))


def _login_failed(endpoint: Endpoint, exc) -> str:
    """What was offered, and what the server said it accepts when it said it."""
    accepted = getattr(exc, "allowed_types", None)
    if accepted:
        said = "; the server accepts only %s" % ", ".join(accepted)
    else:
        detail = _waited(exc, endpoint)
        said = "" if detail == "Authentication failed." else " (%s)" % detail
    return "cannot log in to %s as %s: authentication failed; tried %s%s" % (
        endpoint.name, endpoint.username, methods_tried(endpoint), said)


def methods_tried(endpoint: Endpoint) -> str:
    """The authentication methods offered to `endpoint`, in paramiko's order."""
    if endpoint.password or endpoint.private_key_file:
        methods = ["publickey with private_key_file %s" % endpoint.private_key_file] if endpoint.private_key_file else []
        return ", then ".join(methods + (["password"] if endpoint.password else []))
    methods = ["publickey with the ssh-agent's keys (SSH_AUTH_SOCK)"] if os.environ.get("SSH_AUTH_SOCK") else []
    keys = [path for path in DEFAULT_KEYS if os.path.isfile(os.path.expanduser(path))]
    methods += ["publickey with %s" % ", ".join(keys)] if keys else []
    return ", then ".join(methods) or ("nothing: neither password nor private_key_file is set, and there is no "
                                       "ssh-agent (SSH_AUTH_SOCK) and no default key (%s)" % ", ".join(DEFAULT_KEYS))


def cause(exc: BaseException) -> str:
    """An SDK or socket error in its own words, with the file an OSError names."""
    if isinstance(exc, OSError) and exc.strerror:
        return "%s: %s" % (exc.strerror, exc.filename) if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__


def _waited(exc: BaseException, endpoint: Endpoint) -> str:
    """A wait that ran out (socket, banner, key exchange, authentication, channel) also names
    the setting that bounds it. paramiko's start_client stops waiting for a handshake without a
    word (the next step then finds no session), and a banner that never came is an error whose
    timeout has no text."""
    text = cause(exc)
    waited = next((ours for theirs, ours in UNFINISHED.items() if text.startswith(theirs)), None)
    if waited or isinstance(exc, TimeoutError) or "timeout" in text.lower() or "timed out" in text.lower():
        return "%s (connect_timeout: %g s)" % (waited or text, endpoint.connect_timeout)
    return text
