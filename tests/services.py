# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real servers on 127.0.0.1 for tests and benchmarks: OpenSSH sshd, moto's S3 server and nginx.

The backends are tested against what users run, not against fakes, so these start the real
programs as subprocesses on free ports, each with its own throw-away configuration. Nothing here
needs pytest: benchmarks and ad-hoc scripts use the same helpers.
"""

from __future__ import annotations

import getpass
import grp
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field

HOST = "127.0.0.1"
SSHD = "/usr/sbin/sshd"
NGINX = "/usr/sbin/nginx"
PRIVSEP_DIR = "/run/sshd"
START_ATTEMPTS = 5
START_TIMEOUT = 20.0
TEST_ACCESS_KEY = "testing-access-key"
TEST_SECRET_KEY = "testing-secret-key"
TEST_REGION = "us-east-1"
# moto's server with conditional writes made atomic, as on S3 (see the module).
ATOMIC_S3 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "atomic_s3.py")


def free_port() -> int:
    """A port nobody listens on right now; callers retry because another process may take it."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _wait_until_listening(process: subprocess.Popen, port: int, expect: bytes, host: str = HOST) -> bool:
    """True once `host`:`port` answers with `expect` first; False when the process died (port taken)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with socket.create_connection((host, port), timeout=1.0) as sock:
                if not expect or sock.recv(len(expect)) == expect:
                    return process.poll() is None
        except OSError:
            pass
        time.sleep(0.05)
    _stop(process)
    raise RuntimeError("server on port %d did not start within %ss" % (port, START_TIMEOUT))


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _die_with_parent() -> None:
    """A test run killed outright must not leave servers behind holding ports (Linux only)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _start(command_for_port, expect: bytes, log_path: str, env: dict | None = None) -> tuple[subprocess.Popen, int]:
    """Start a server on a free port, retrying when another process grabbed the port first."""
    for _attempt in range(START_ATTEMPTS):
        port = free_port()
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                command_for_port(port),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
                env=env,
            )
        if _wait_until_listening(process, port, expect):
            return process, port
    with open(log_path, "rb") as log:
        raise RuntimeError("server failed to start %d times; log:\n%s" % (START_ATTEMPTS, log.read().decode(errors="replace")))


def _keygen(path: str, comment: str) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path], check=True)


@dataclass
class SshServer:
    """A running sshd serving SFTP for the current user, who logs in with `private_key_file`.

    `storage(root, **overrides)` gives a ready `storage` dict for the sftp backend;
    `sftp_command` replaces OpenSSH's in-process SFTP server (see DROP_ROOT_PERMISSIONS).
    """

    directory: str
    host: str = HOST
    port: int = 0
    username: str = field(default_factory=getpass.getuser)
    sftp_command: str = "internal-sftp"
    process: subprocess.Popen | None = None
    # A network namespace to run in (tests/network.py), listening on `host`:`port` there.
    namespace: object = None
    extra_config: tuple = ()

    @property
    def private_key_file(self) -> str:
        return os.path.join(self.directory, "user_key")

    @property
    def other_key_file(self) -> str:
        """A valid key the server does not authorise, for wrong-credential tests."""
        return os.path.join(self.directory, "other_key")

    @property
    def host_key_file(self) -> str:
        return os.path.join(self.directory, "host_key")

    @property
    def known_hosts_file(self) -> str:
        return os.path.join(self.directory, "known_hosts")

    @property
    def log_file(self) -> str:
        return os.path.join(self.directory, "sshd.log")

    def known_hosts_line(self) -> str:
        with open(self.host_key_file + ".pub") as handle:
            kind, key = handle.read().split()[:2]
        name = self.host if self.port == 22 else "[%s]:%d" % (self.host, self.port)
        return "%s %s %s\n" % (name, kind, key)

    def connection(self, **overrides) -> dict:
        """The settings that reach this server, as SFTP storage and each of its jump_hosts take them."""
        config = {
            "host": self.host,
            "port": self.port,
            "username": self.username,
            "private_key_file": self.private_key_file,
            "known_hosts_file": self.known_hosts_file,
            "host_key_policy": "reject",
        }
        config.update(overrides)
        return config

    def storage(self, root: str, **overrides) -> dict:
        return dict(self.connection(type="sftp", root=root), **overrides)

    def _config(self, port: int) -> str:
        path = os.path.join(self.directory, "sshd_config")
        with open(path, "w") as handle:
            handle.write(
                "\n".join(
                    [
                        "Port %d" % port,
                        "ListenAddress %s" % self.host,
                        "HostKey %s" % self.host_key_file,
                        "PidFile %s" % os.path.join(self.directory, "sshd.pid"),
                        "AuthorizedKeysFile %s" % os.path.join(self.directory, "authorized_keys"),
                        "AllowUsers %s" % self.username,
                        # The key and config live in a temp dir under world-writable /tmp.
                        "StrictModes no",
                        "PubkeyAuthentication yes",
                        "PasswordAuthentication no",
                        "KbdInteractiveAuthentication no",
                        "UsePAM no",
                        "PermitRootLogin prohibit-password",
                        "Subsystem sftp %s" % self.sftp_command,
                        "MaxStartups 100",
                        "LogLevel ERROR",
                        *self.extra_config,
                        "",
                    ]
                )
            )
        return path

    def start(self) -> "SshServer":
        _keygen(self.host_key_file, "distributor-test-host")
        _keygen(self.private_key_file, "distributor-test-user")
        _keygen(self.other_key_file, "distributor-test-other")
        shutil.copy(self.private_key_file + ".pub", os.path.join(self.directory, "authorized_keys"))
        if os.geteuid() == 0:
            # sshd started as root insists on its privilege separation directory, which
            # containers without systemd-tmpfiles lack.
            os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
        if self.namespace is None:
            self.process, self.port = _start(
                lambda port: [SSHD, "-D", "-e", "-f", self._config(port)], b"SSH-", self.log_file
            )
        else:
            self._start_inside()
        with open(self.known_hosts_file, "w") as handle:
            handle.write(self.known_hosts_line())
        return self

    def _start_inside(self) -> None:
        """In a namespace of its own there is no port to race for, and the server may be out of
        this namespace's reach: it is up once sshd writes its pid file, which it does after binding."""
        pid_file = os.path.join(self.directory, "sshd.pid")
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(self.namespace.command([SSHD, "-D", "-e", "-f", self._config(self.port)]),
                                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            preexec_fn=_die_with_parent)
        deadline = time.monotonic() + START_TIMEOUT
        while not (os.path.exists(pid_file) and os.path.getsize(pid_file)):
            if self.process.poll() is not None or time.monotonic() > deadline:
                _stop(self.process)
                with open(self.log_file, "rb") as log:
                    raise RuntimeError("sshd did not start in its namespace; log:\n%s" % log.read().decode(errors="replace"))
            time.sleep(0.02)

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)
            self.process = None
        shutil.rmtree(self.directory, ignore_errors=True)


# Tests run as root, who reads and writes any directory whatever its permissions. This prefix
# runs a command as root without that power (the capabilities are dropped for good), so a
# directory another account cannot list is unlistable for it too.
DROP_ROOT_PERMISSIONS = ("/usr/bin/setpriv", "--inh-caps=-dac_override,-dac_read_search",
                         "--bounding-set=-dac_override,-dac_read_search")


def start_sshd(sftp_command: str = "internal-sftp", **settings) -> SshServer:
    """An sshd on 127.0.0.1 (or `host`:`port` in `namespace`), `extra_config` lines added to its config."""
    return SshServer(tempfile.mkdtemp(prefix="distributor-sshd-"), sftp_command=sftp_command, **settings).start()


@dataclass
class S3Server:
    """moto's S3 HTTP server in its own process (atomic_s3.py: its conditional writes decided one
    at a time, as S3 decides them), reached through boto3 exactly like AWS. With
    `check_credentials` it refuses every request whose access key it does not know, as AWS would
    (moto's INITIAL_NO_AUTH_ACTION_COUNT=0); it knows none, so nothing can be created there."""

    directory: str
    check_credentials: bool = False
    host: str = HOST
    port: int = 0
    process: subprocess.Popen | None = None
    # A command the server runs under (`env LD_PRELOAD=...` for a shifted clock).
    wrapper: tuple = ()
    _client: object = None

    @property
    def endpoint_url(self) -> str:
        return "http://%s:%d" % (self.host, self.port)

    def client(self):
        """One boto3 client per server: creating one costs a few hundred milliseconds of CPU."""
        if self._client is None:
            self._client = self._make_client()
        return self._client

    def _make_client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name=TEST_REGION,
            aws_access_key_id=TEST_ACCESS_KEY,
            aws_secret_access_key=TEST_SECRET_KEY,
        )

    def create_bucket(self, name: str | None = None) -> str:
        """A new empty bucket (a unique name unless given), so tests never share objects."""
        name = name or "distributor-%s" % uuid.uuid4().hex[:16]
        self.client().create_bucket(Bucket=name)
        return name

    def storage(self, bucket: str, **overrides) -> dict:
        config = {
            "type": "s3",
            "bucket": bucket,
            "prefix": "",
            "region": TEST_REGION,
            "endpoint_url": self.endpoint_url,
            "access_key": TEST_ACCESS_KEY,
            "secret_key": TEST_SECRET_KEY,
        }
        config.update(overrides)
        return config

    def start(self) -> "S3Server":
        self.process, self.port = _start(
            lambda port: [*self.wrapper, sys.executable, ATOMIC_S3, self.host, str(port)],
            b"",
            os.path.join(self.directory, "moto.log"),
            dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="0") if self.check_credentials else None,
        )
        return self

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)
            self.process = None
        shutil.rmtree(self.directory, ignore_errors=True)


def start_s3(check_credentials: bool = False) -> S3Server:
    return S3Server(tempfile.mkdtemp(prefix="distributor-moto-"), check_credentials).start()


@dataclass
class NginxServer:
    """nginx serving `root` on 127.0.0.1 with the `server` block given (its `listen` and `root`
    lines replaced by this server's port and `root`; a block that serves no files, a proxy's, has
    no `root` line and `root` None), as the current user: the pid file, logs and
    temporary paths sit in `directory`, and the `user` directive is written only when running as
    root (whose workers would otherwise become nobody, who cannot enter pytest's directories)."""

    directory: str
    root: str | None
    server_block: str
    host: str = HOST
    port: int = 0
    process: subprocess.Popen | None = None
    # A network namespace to run in (tests/network.py), listening on `host`:`port` there.
    namespace: object = None

    @property
    def url(self) -> str:
        return "http://%s:%d" % (self.host, self.port)

    @property
    def log_file(self) -> str:
        return os.path.join(self.directory, "nginx.log")

    def _server(self, port: int) -> str:
        """The block as given, its one `listen` and one `root` line pointed at this test's."""
        lines = self.server_block.splitlines()
        replaced = (("listen", "%s:%d" % (self.host, port)),) + ((("root", self.root),) if self.root is not None else ())
        for directive, value in replaced:
            found = [i for i, line in enumerate(lines) if line.split()[:1] == [directive]]
            if len(found) != 1:
                raise ValueError("the nginx server block needs exactly one `%s` line, found %d:\n%s"
                                 % (directive, len(found), self.server_block))
            line = lines[found[0]]
            lines[found[0]] = "%s%s %s;" % (line[:len(line) - len(line.lstrip())], directive, value)
        return "\n".join(lines)

    def _config(self, port: int) -> str:
        here = self.directory
        user = ["user %s %s;" % (pwd.getpwuid(os.geteuid()).pw_name, grp.getgrgid(os.getegid()).gr_name)] \
            if os.geteuid() == 0 else []
        temp = ["%s_temp_path %s;" % (kind, os.path.join(here, kind))
                for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")]
        path = os.path.join(here, "nginx.conf")
        with open(path, "w") as handle:
            handle.write("\n".join([
                *user,
                "daemon off;",
                "worker_processes 1;",
                "pid %s;" % os.path.join(here, "nginx.pid"),
                "error_log %s warn;" % self.log_file,
                "events { worker_connections 64; }",
                "http {",
                "access_log off;",
                *temp,
                self._server(port),
                "}",
                "",
            ]))
        return path

    def _command(self, port: int) -> list:
        return [NGINX, "-p", self.directory, "-e", self.log_file, "-c", self._config(port)]

    def start(self) -> "NginxServer":
        # A relative `include fastcgi_params;` is read beside nginx.conf: the package's own copy.
        shipped = "/etc/nginx/fastcgi_params"
        with open(os.path.join(self.directory, "fastcgi_params"), "wb") as handle:
            if os.path.exists(shipped):
                with open(shipped, "rb") as source:
                    handle.write(source.read())
        if self.namespace is None:
            self.process, self.port = _start(self._command, b"", self.log_file)
            return self
        # In a namespace of its own there is no port to race for; `host` is reachable from here.
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(self.namespace.command(self._command(self.port)), stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        if not _wait_until_listening(self.process, self.port, b"", self.host):
            with open(self.log_file, "rb") as log:
                raise RuntimeError("nginx did not start in its namespace; log:\n%s" % log.read().decode(errors="replace"))
        return self

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)
            self.process = None
        shutil.rmtree(self.directory, ignore_errors=True)


def start_nginx(root: str | None, server_block: str, **settings) -> NginxServer:
    """nginx on a free port of 127.0.0.1 serving `root` (which may be a symbolic link), or on
    `host`:`port` in `namespace`."""
    return NginxServer(tempfile.mkdtemp(prefix="distributor-nginx-"), root, server_block, **settings).start()


def without_extension(storage, extension: str):
    """An SFTP storage whose server does not announce `extension` (paramiko's session is real;
    only the list of extensions is cut), as a server other than OpenSSH's may not."""
    new_session = storage._new_session

    def session(client):
        opened = new_session(client)
        opened.extensions = opened.extensions - {extension}
        return opened
    storage._new_session = session
    return storage
