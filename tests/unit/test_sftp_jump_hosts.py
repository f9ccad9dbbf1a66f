# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SFTP storage through jump hosts, against real sshd processes that are reachable only through
them (the `jump_network` fixture: network namespaces, see tests/network.py).

What users depend on: the path really goes through every hop, each hop's host key is checked
like the server's, one chain of connections serves a whole publish and is closed (server first)
on every exit path, and each failure is a storage_error naming the hop, without a password.
"""

from __future__ import annotations

import os
import socket
import time

import paramiko
import pytest
from builders import write_bundle
from services import start_sshd

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.config import parse_destination
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import STATE_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp.storage import SftpStorage
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp.chain import Prompt

SECRET = "pw-JUMPSECRET-\u00e4/+="
CREATED = "2026-06-04T11:55:00Z"


def expect_error(reason: str, call, *args) -> DistributorError:
    with pytest.raises(DistributorError) as caught:
        call(*args)
    assert caught.value.reason == reason, caught.value.message
    return caught.value


def open_sockets() -> int:
    """Sockets this process holds: every connection of a chain is one, or a channel inside one."""
    found = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            found += os.readlink("/proc/self/fd/" + name).startswith("socket:")
        except FileNotFoundError:
            continue
    return found


@pytest.fixture
def transports(monkeypatch):
    """Every paramiko Transport the storage makes, and the order they are closed in."""
    made, closed = [], []

    class Counted(paramiko.Transport):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

        def close(self):
            if self not in closed:
                closed.append(self)
            super().close()

    monkeypatch.setattr(paramiko, "Transport", Counted)
    return made, closed


def settled(made: list, sockets_before: int) -> tuple[int, int]:
    """(transports still running, sockets above the count before), once closing had time to end
    (a transport's thread stops on its next poll, within a tenth of a second; a busy host gets 30 s)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (any(t.is_alive() for t in made) or open_sockets() > sockets_before):
        time.sleep(0.05)
    return sum(t.is_alive() for t in made), open_sockets() - sockets_before


@pytest.fixture(scope="module")
def no_forwarding():
    """A bastion whose sshd forbids forwarding, in front of an ordinary server."""
    bastion = start_sshd(extra_config=("AllowTcpForwarding no",))
    yield bastion
    bastion.stop()


@pytest.fixture(scope="module")
def silent(jump_network):
    """A port that accepts connections and never says a word, reachable from here and from
    jump host 1: a host that hangs after the TCP handshake."""
    with socket.socket() as listener:
        listener.bind((jump_network.here, 0))
        listener.listen(8)
        yield listener.getsockname()[1]


def through(network, target, root, count: int, **overrides) -> dict:
    """Storage settings for `target` through the first `count` jump hosts."""
    hops = [network.jump1.connection(), network.jump2.connection()][:count]
    return target.storage(str(root), jump_hosts=hops, **overrides)


# -- the path --------------------------------------------------------------------------------


def test_a_server_behind_one_jump_host_is_reached_through_it_and_not_directly(jump_network, tmp_path):
    root = tmp_path / "root"
    direct = SftpStorage(jump_network.behind1.storage(str(root)), "", "t1")
    error = expect_error("storage_error", direct.list_files)
    assert "cannot connect to sftp://" in error.message
    storage = SftpStorage(through(jump_network, jump_network.behind1, root, 1), "", "t1")
    try:
        storage.write_bytes("a.txt", b"through one hop")
        assert storage.read_bytes("a.txt", STATE_LIMIT) == b"through one hop"
    finally:
        storage.close()
    assert (root / "a.txt").read_bytes() == b"through one hop"


def test_a_server_behind_two_jump_hosts_is_reached_only_through_both(jump_network, tmp_path):
    """Each server has its own host key, so reaching one means reaching that one: through the first
    hop alone, 127.0.0.1 is the server behind it, whose key is not the one recorded."""
    root = tmp_path / "root"
    one_hop = SftpStorage(through(jump_network, jump_network.behind2, root, 1), "", "t1")
    assert "does not match" in expect_error("storage_error", one_hop.list_files).message
    storage = SftpStorage(through(jump_network, jump_network.behind2, root, 2), "", "t1")
    try:
        storage.write_bytes("b.txt", b"through two hops")
        assert storage.list_files() == ["b.txt"]
    finally:
        storage.close()


def test_one_publish_uses_one_chain_for_every_request_and_closes_it_server_first(jump_network, transports, tmp_path):
    made, closed = transports
    bundle = write_bundle(tmp_path / "bundle", {"page%02d.txt" % i: b"%d" % i for i in range(40)})
    destination = {"id": "behind", "storage": through(jump_network, jump_network.behind2, tmp_path / "root", 2),
                   "path": "site"}
    sockets_before = open_sockets()
    result = publish(bundle, {"id": "reports"}, destination)
    assert result["action"] == "publish" and len(result["written"]) == 40
    assert len(made) == 3, "one connection per hop and one to the server, for the whole publish"
    assert closed == made[::-1]
    assert settled(made, sockets_before) == (0, 0)
    assert publish(bundle, {"id": "reports"}, destination, check_mode=True)["action"] == "skip"
    assert len(made) == 6 and closed == made[2::-1] + made[:2:-1]
    assert settled(made, sockets_before) == (0, 0)


def test_the_first_connection_sends_at_once_and_asks_to_acknowledge_every_read_at_once(jump_network, tmp_path):
    """Through a jump host, its sshd holds each small reply until the last is acknowledged, and
    Linux delays acknowledgements up to 40 ms: 3.4x the direct publish's time before, about 1x
    now (benchmarks/jump_host.py)."""
    storage = SftpStorage(through(jump_network, jump_network.behind1, tmp_path / "root", 1), "", "t1")
    try:
        storage.list_files()
        sock = storage._chain.clients[0].get_transport().sock
        assert isinstance(sock, Prompt) and sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        storage.close()
    asked = []

    class Spy:
        def setsockopt(self, *option):
            asked.append(option)

        def recv(self, size):
            asked.append("recv")
            return b"x"

    assert Prompt(Spy()).recv(1) == b"x"
    assert asked == [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1), (socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1), "recv"]


# -- failures, each naming its hop and leaving nothing open ------------------------------------


def _hop(network, index: int, **overrides) -> dict:
    return (network.jump1, network.jump2)[index].connection(**overrides)


def _two_hops(network, tmp_path, first=None, second=None, **server) -> dict:
    hops = [dict(_hop(network, 0), **(first or {})), dict(_hop(network, 1), **(second or {}))]
    return network.behind2.storage(str(tmp_path / "root"), jump_hosts=hops, **server)


def _unknown_key(network, tmp_path):
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    storage = _two_hops(network, tmp_path, second={"known_hosts_file": str(empty)})
    line = network.jump2.known_hosts_line().strip()
    return storage, ["the host key of jump host 2 (%s:22)" % network.jump2.host, "is not in %s" % empty, line,
                     "`ssh-keyscan -p 22 %s` run on jump host 1 (%s:22)" % (network.jump2.host, network.jump1.host)]


def _changed_key(network, tmp_path):
    """The second hop's known_hosts holds another server's key under its name: what a machine in
    the middle would show. accept_new does not trust it either."""
    kind, key = network.jump1.known_hosts_line().split()[1:3]
    wrong = tmp_path / "wrong_known_hosts"
    wrong.write_text("%s %s %s\n" % (network.jump2.host, kind, key))
    storage = _two_hops(network, tmp_path, second={"known_hosts_file": str(wrong), "host_key_policy": "accept_new"})
    return storage, ["the host key of jump host 2 (%s:22)" % network.jump2.host, "does not match", str(wrong),
                     network.jump2.known_hosts_line().split()[2]]


def _forwarding_refused(network, tmp_path, no_forwarding, sshd_server):
    storage = sshd_server.storage(str(tmp_path / "root"), jump_hosts=[no_forwarding.connection()])
    return storage, ["jump host 1 (127.0.0.1:%d) refused to forward a connection to sftp://" % no_forwarding.port,
                     "administratively prohibited", "AllowTcpForwarding"]


FAILURES = {
    "first hop unreachable": lambda n, t, s: (
        _two_hops(n, t, first={"port": 1}), ["cannot connect to jump host 1 (%s:1)" % n.jump1.host]),
    "first hop refuses the login": lambda n, t, s: (
        _two_hops(n, t, first={"private_key_file": n.jump1.other_key_file, "password": SECRET}),
        ["cannot log in to jump host 1 (%s:22) as %s" % (n.jump1.host, n.jump1.username),
         "tried publickey with private_key_file %s, then password" % n.jump1.other_key_file,
         "the server accepts only publickey"]),
    "second hop not reachable from the first": lambda n, t, s: (
        _two_hops(n, t, second={"port": 1}),
        ["jump host 1 (%s:22) could not open a connection to jump host 2 (%s:1)" % (n.jump1.host, n.jump2.host)]),
    "second hop's key unknown": lambda n, t, s: _unknown_key(n, t),
    "second hop's key changed": lambda n, t, s: _changed_key(n, t),
    "second hop silent past connect_timeout": lambda n, t, s: (
        _two_hops(n, t, second={"host": n.here, "port": s, "connect_timeout": 1}),
        ["cannot connect to jump host 2 (%s:%d)" % (n.here, s), "(connect_timeout: 1 s)"]),
    "server refuses the login": lambda n, t, s: (
        _two_hops(n, t, private_key_file=n.behind2.other_key_file),
        ["cannot log in to sftp://%s@127.0.0.1:%d as %s" % (n.behind2.username, n.behind2.port, n.behind2.username)]),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_every_failure_names_its_hop_and_leaves_nothing_open(case, jump_network, silent, transports, tmp_path):
    made, closed = transports
    settings, expected = FAILURES[case](jump_network, tmp_path, silent)
    sockets_before = open_sockets()
    started = time.monotonic()
    storage = SftpStorage(settings, "", "t1")
    error = expect_error("storage_error", storage.write_bytes, "a.txt", b"x")
    assert time.monotonic() - started < 20, "bounded by the hops' connect_timeout (1 s), not the default 30 s"
    for fragment in expected:
        assert fragment in error.message
    assert SECRET not in error.message and SECRET not in repr(error.__cause__)
    assert closed == made[::-1], "closed from the last connection back to the first"
    assert settled(made, sockets_before) == (0, 0)
    storage.close()


def test_a_bastion_that_forbids_forwarding_is_named_and_leaves_nothing_open(
        jump_network, no_forwarding, sshd_server, transports, tmp_path):
    made, closed = transports
    settings, expected = _forwarding_refused(jump_network, tmp_path, no_forwarding, sshd_server)
    sockets_before = open_sockets()
    error = expect_error("storage_error", SftpStorage(settings, "", "t1").list_files)
    for fragment in expected:
        assert fragment in error.message
    assert len(made) == 1 and closed == made
    assert settled(made, sockets_before) == (0, 0)


# -- the server alone: the same settings and words without jump hosts (issue #31) ------------


def test_a_refused_login_names_the_methods_tried_and_those_the_server_accepts(sshd_server, tmp_path):
    cases = {
        "tried password; the server accepts only publickey": {"private_key_file": None, "password": SECRET},
        "tried publickey with private_key_file %s" % sshd_server.other_key_file: {
            "private_key_file": sshd_server.other_key_file},
    }
    for words, settings in cases.items():
        error = expect_error("storage_error", SftpStorage(sshd_server.storage(str(tmp_path), **settings), "", "t1").list_files)
        assert "cannot log in to sftp://%s@127.0.0.1:%d as %s: authentication failed; %s" % (
            sshd_server.username, sshd_server.port, sshd_server.username, words) in error.message
        assert SECRET not in error.message and SECRET not in repr(error.__cause__)


def test_connect_timeout_bounds_a_server_that_never_answers(sshd_server, tmp_path):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        settings = sshd_server.storage(str(tmp_path), port=listener.getsockname()[1], connect_timeout=1)
        started = time.monotonic()
        error = expect_error("storage_error", SftpStorage(settings, "", "t1").list_files)
    assert time.monotonic() - started < 20, "bounded by connect_timeout (1 s), not the default 30 s"
    assert "cannot connect to sftp://" in error.message and "(connect_timeout: 1 s)" in error.message


# -- host keys as values, and first use -------------------------------------------------------


def test_known_hosts_given_as_values_serve_every_hop(jump_network, tmp_path):
    """An AWX credential hands known_hosts lines over as a value: no file is read or written."""
    hops = [_hop(jump_network, index, known_hosts_file=None, known_hosts="# from the credential\n" + server.known_hosts_line())
            for index, server in enumerate((jump_network.jump1, jump_network.jump2))]
    settings = jump_network.behind2.storage(str(tmp_path / "root"), jump_hosts=hops, known_hosts_file=None,
                                            known_hosts=jump_network.behind2.known_hosts_line())
    storage = SftpStorage(parse_destination({"id": "d", "storage": settings}).storage, "", "t1")
    try:
        storage.write_bytes("c.txt", b"keys from values")
    finally:
        storage.close()
    assert (tmp_path / "root" / "c.txt").read_bytes() == b"keys from values"


def test_a_damaged_known_hosts_value_is_invalid_config_naming_the_hop_and_line(jump_network, tmp_path):
    hops = [_hop(jump_network, 0, known_hosts=jump_network.jump1.known_hosts_line() + "bastion ssh-ed25519 AAAA!!!notbase64\n")]
    storage = SftpStorage(jump_network.behind1.storage(str(tmp_path), jump_hosts=hops), "", "t1")
    error = expect_error("invalid_config", storage.list_files)
    assert "storage.jump_hosts[0].known_hosts line 2 is not a valid known_hosts entry" in error.message


def test_accept_new_at_a_jump_host_records_its_key_in_its_file(jump_network, tmp_path):
    recorded = tmp_path / "ssh" / "known_hosts"
    hops = [_hop(jump_network, 0, known_hosts_file=str(recorded), host_key_policy="accept_new")]
    storage = SftpStorage(jump_network.behind1.storage(str(tmp_path / "root"), jump_hosts=hops), "", "t1")
    try:
        storage.write_bytes("d.txt", b"1")
    finally:
        storage.close()
    assert recorded.read_text() == jump_network.jump1.known_hosts_line()


# -- settings ---------------------------------------------------------------------------------


def test_a_jump_host_takes_the_connection_settings_of_sftp_storage_and_no_others():
    hop = {"host": "bastion.example", "port": 2222, "username": "jump", "password": "x", "private_key_file": "/k",
           "known_hosts_file": "/kh", "known_hosts": "bastion.example ssh-ed25519 AAAA", "host_key_policy": "accept_new",
           "connect_timeout": 5}
    storage = {"type": "sftp", "host": "web", "root": "/srv/www", "connect_timeout": 2.5, "jump_hosts": [hop]}
    assert parse_destination({"id": "d", "storage": storage}).storage["jump_hosts"] == [hop]
    for wrong in ({"root": "/srv"}, {"connect_timeout": 0}, {"host": ""}, {"host_key_policy": "yes"}):
        bad = dict(storage, jump_hosts=[dict(hop, **wrong)])
        error = expect_error("invalid_config", parse_destination, {"id": "d", "storage": bad})
        assert "jump_hosts" in error.message
    expect_error("invalid_config", parse_destination, {"id": "d", "storage": dict(storage, jump_hosts=[{"port": 22}])})


def test_unset_jump_host_options_from_ansible_are_left_out():
    """Ansible hands each hop every option, unset ones as None."""
    hop = dict.fromkeys(("port", "username", "password", "private_key_file", "known_hosts_file", "known_hosts",
                         "host_key_policy", "connect_timeout"), None)
    storage = {"type": "sftp", "host": "web", "root": "/srv/www", "jump_hosts": [dict(hop, host="bastion")]}
    assert parse_destination({"id": "d", "storage": storage}).storage["jump_hosts"] == [{"host": "bastion"}]
