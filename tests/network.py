# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Network namespaces, for servers that must be reachable only through another server.

Why namespaces: on Linux all of 127.0.0.0/8 is this host's loopback, so a server bound to
127.0.0.3 is as reachable from the test as one on 127.0.0.1; and an sshd that forwards a
connection connects from the same source address (the route's, 127.0.0.1) that the test's own
connection has, so no `AllowUsers user@addr` or `Match Address` rule can tell a forwarded
connection from a direct one. A network namespace has a loopback of its own, which nothing outside
it can reach, so a server listening there is reachable only through a server inside:

    this namespace (the tests, ansible-playbook, the modules)
      | veth 198.18.N.1 <-> 198.18.N.2
    namespace A: jump host 1 listens on 198.18.N.2; a server on A's 127.0.0.1 only A reaches
      | veth 198.18.N.5 <-> 198.18.N.6
    namespace B: jump host 2 listens on 198.18.N.6; a server on B's 127.0.0.1 only B reaches

`WebFleet` puts each web server (an sshd for SFTP and an nginx) in a namespace of its own, linked
to this one, as separate machines would be, and a load balancer here in front of them.

A new namespace does not forward (its net.ipv4.ip_forward is 0) and this one has no route to
198.18.N.4/30, so B is reachable from here only through jump host 1's sshd. 198.18.0.0/15 is
reserved for network benchmarks (RFC 2544): no real network is shadowed. Needs root (CAP_SYS_ADMIN
and CAP_NET_ADMIN); everything goes when the holder process dies, which it does with its parent.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
import uuid
from typing import NamedTuple

from services import HOST, _die_with_parent, _stop, free_port, start_nginx, start_sshd

NSENTER = "/usr/bin/nsenter"
UNSHARE = "/usr/bin/unshare"
IP = "/usr/sbin/ip"


class Namespace:
    """A network namespace held open by a sleeping process; `command(argv)` runs argv inside it."""

    def __init__(self):
        self.holder = subprocess.Popen([UNSHARE, "--net", "--", "sleep", "infinity"], stdin=subprocess.DEVNULL,
                                       preexec_fn=_die_with_parent)
        self.path = "/proc/%d/ns/net" % self.holder.pid
        deadline = time.monotonic() + 10
        while os.readlink(self.path) == os.readlink("/proc/self/ns/net"):
            if self.holder.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("unshare --net did not start (is this root?)")
            time.sleep(0.01)
        self.run(IP, "link", "set", "lo", "up")

    def command(self, argv) -> list:
        return [NSENTER, "--net=" + self.path, "--", *argv]

    def run(self, *argv) -> None:
        subprocess.run(self.command(argv), check=True, capture_output=True)

    def stop(self) -> None:
        _stop(self.holder)


def link(outer: Namespace | None, inner: Namespace, subnet: str) -> tuple[str, str]:
    """A veth pair from `outer` (None: this namespace) into `inner` on the /30 `subnet`
    (`a.b.c.d` with d a multiple of 4); (outer's address, inner's address)."""
    prefix, last = subnet.rsplit(".", 1)
    near, far = "%s.%d" % (prefix, int(last) + 1), "%s.%d" % (prefix, int(last) + 2)
    name = "dj" + uuid.uuid4().hex[:10]  # unique here, where other test runs add theirs
    commands = [[IP, "link", "add", name, "type", "veth", "peer", "name", name + "i", "netns", str(inner.holder.pid)],
                [IP, "addr", "add", near + "/30", "dev", name], [IP, "link", "set", name, "up"]]
    for argv in commands:
        subprocess.run(outer.command(argv) if outer else argv, check=True, capture_output=True)
    inner.run(IP, "addr", "add", far + "/30", "dev", name + "i")
    inner.run(IP, "link", "set", name + "i", "up")
    return near, far


def free_subnet() -> str:
    """198.18.N.0 for an N no other test run here uses now (each adds its own routes)."""
    used = subprocess.run([IP, "-4", "route", "show", "198.18.0.0/15"], capture_output=True, text=True, check=True).stdout
    choices = [n for n in range(1, 255) if " 198.18.%d." % n not in " " + used.replace("\n", " ")]
    return "198.18.%d.0" % random.choice(choices)


class Network:
    """Namespaces and the servers started in them, stopped in the reverse order, also when
    starting them failed half way (`_start`, each subclass's)."""

    def __init__(self, *args):
        self.namespaces: list[Namespace] = []
        self.servers: list = []
        try:
            self._start(*args)
        except BaseException:
            self.stop()
            raise

    def _start(self, *args) -> None:
        raise NotImplementedError

    def _started(self, server):
        self.servers.append(server)
        return server

    def stop(self) -> None:
        for server in reversed(self.servers):
            server.stop()
        for namespace in reversed(self.namespaces):
            namespace.stop()


class JumpNetwork(Network):
    """Two jump hosts in a row and an SFTP server behind each, reachable only through it (the
    picture above): `behind1` through `jump1`, `behind2` through `jump1` then `jump2`."""

    def _start(self) -> None:
        outer, inner = Namespace(), Namespace()
        self.namespaces += [outer, inner]
        subnet = free_subnet()
        # Our own end of the first link: the jump hosts reach this namespace there.
        self.here, jump1_address = link(None, outer, subnet)
        _near, jump2_address = link(outer, inner, subnet[:-1] + "4")
        # Free here now, so a direct attempt at a server behind is refused rather than answered.
        port = free_port()
        self.jump1 = self._sshd(outer, jump1_address, 22)
        self.jump2 = self._sshd(inner, jump2_address, 22)
        self.behind1 = self._sshd(outer, HOST, port)
        self.behind2 = self._sshd(inner, HOST, port)

    def _sshd(self, namespace: Namespace, host: str, port: int):
        return self._started(start_sshd(namespace=namespace, host=host, port=port))


def balancer_block(upstreams: list) -> str:
    """An nginx load balancer's configuration: each request to the next of `upstreams` (round
    robin), none tried again elsewhere (`proxy_next_upstream off`: an error one server answers is
    the client's), on kept-alive connections."""
    servers = "".join("    server %s;\n" % upstream for upstream in upstreams)
    return "\n".join([
        "upstream fleet {", servers + "    keepalive 16;", "}",
        "server {", "    listen 80;", "    location / {", "        proxy_pass http://fleet;",
        "        proxy_http_version 1.1;", '        proxy_set_header Connection "";',
        "        proxy_next_upstream off;", "    }", "}"])


class WebHost(NamedTuple):
    """One web server of a WebFleet: its root directory, its sshd and its nginx."""

    root: str
    sshd: object
    web: object


class WebFleet(Network):
    """Web servers, one per entry of `roots`, each in a network namespace of its own holding its
    sshd (`hosts[i].sshd`, SFTP on port 22) and its nginx (`hosts[i].web`) serving the bundle path
    `<root>/<name>` with `server_block`; and an nginx round-robin load balancer on 127.0.0.1
    (`balancer.url`) in front of them. The namespaces share this machine's files, so a test looks
    at each host's root directly."""

    def _start(self, roots: list, name: str, server_block: str) -> None:
        self.hosts: list[WebHost] = []
        prefix = free_subnet()[:-1]
        for i, root in enumerate(roots):
            namespace = Namespace()
            self.namespaces.append(namespace)
            _here, address = link(None, namespace, "%s%d" % (prefix, 4 * i))
            sshd = self._started(start_sshd(namespace=namespace, host=address, port=22))
            web = self._started(start_nginx(os.path.join(str(root), name), server_block, namespace=namespace,
                                            host=address, port=80))
            self.hosts.append(WebHost(str(root), sshd, web))
        self.balancer = self._started(start_nginx(None, balancer_block(["%s:80" % host.web.host for host in self.hosts])))
