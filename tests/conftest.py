# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make the collection importable and provide the real servers the backends are tested against."""

from __future__ import annotations

import os
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS_PATH = os.path.join(REPO_ROOT, ".build", "src")
COLLECTION_LINK = os.path.join(COLLECTIONS_PATH, "ansible_collections", "distributor", "core")


def _link_collection() -> None:
    """Ansible imports the collection as ansible_collections.distributor.core, so the checkout
    is linked into that layout; safe when several xdist workers do it at once."""
    if os.path.realpath(COLLECTION_LINK) == REPO_ROOT:
        return
    os.makedirs(os.path.dirname(COLLECTION_LINK), exist_ok=True)
    if os.path.islink(COLLECTION_LINK):
        os.unlink(COLLECTION_LINK)
    try:
        os.symlink(os.path.relpath(REPO_ROOT, os.path.dirname(COLLECTION_LINK)), COLLECTION_LINK)
    except FileExistsError:
        if os.path.realpath(COLLECTION_LINK) != REPO_ROOT:
            raise


_link_collection()
for _path in (COLLECTIONS_PATH, os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from network import JumpNetwork  # noqa: E402  (needs the sys.path set just above)
from services import DROP_ROOT_PERMISSIONS, start_s3, start_sshd  # noqa: E402


@pytest.fixture(scope="module")
def unprivileged_sshd():
    """An sshd whose SFTP server runs without root's power over permissions (DAC override): what
    an SFTP account that is not root meets."""
    command = "internal-sftp"
    if os.geteuid() == 0:
        command = " ".join(DROP_ROOT_PERMISSIONS + ("/usr/lib/openssh/sftp-server",))
    server = start_sshd(command)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def sshd_server():
    """OpenSSH sshd on 127.0.0.1 serving SFTP to the current user (one per xdist worker)."""
    server = start_sshd()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def jump_network():
    """Two jump hosts in a row, each the only way to the SFTP server behind it: servers in network
    namespaces of their own (tests/network.py says why), one set per xdist worker."""
    network = JumpNetwork()
    yield network
    network.stop()


@pytest.fixture(scope="session")
def s3_server():
    """moto's S3 server on 127.0.0.1 (one per xdist worker); make buckets with create_bucket()."""
    server = start_s3()
    yield server
    server.stop()
