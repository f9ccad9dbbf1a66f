# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline stand-in for the ``get-pip`` bootstrap script that ansible-test downloads.

``ansible-test sanity --venv`` creates an empty virtual environment per test and bootstraps pip
in it by running ``get-pip-<version>.py``, which it downloads from a host outside the package
registries unless ``~/.ansible/test/cache/get_pip_<version>.py`` already exists. ``make sanity``
copies this file to that place. It installs the pip bundled with Python (``ensurepip``) and then
runs ``pip install`` with the arguments ansible-test gave (for example ``pip==24.2``), using the
package index, certificates and other pip settings configured on the machine.
"""

from __future__ import annotations

import ensurepip
import os
import subprocess
import sys

# Options understood by get-pip itself rather than by ``pip install``.
GET_PIP_OPTIONS = ('--no-setuptools', '--no-wheel', '--no-pip')


def main():
    """Bootstrap pip with ensurepip, then install what ansible-test asked for."""
    args = sys.argv[1:]

    # ensurepip.bootstrap() removes every PIP_* variable from os.environ and points
    # PIP_CONFIG_FILE at /dev/null for the rest of this process. Keep the environment from
    # before, so the install below sees the machine's pip configuration (index, certificates).
    environ = dict(os.environ)

    ensurepip.bootstrap(upgrade=True)

    pip = [sys.executable, '-m', 'pip']
    install_args = [arg for arg in args if arg not in GET_PIP_OPTIONS]

    subprocess.run(pip + ['install'] + install_args, env=environ, check=True)

    if '--no-setuptools' in args:
        # Some Pythons' ensurepip also install setuptools; get-pip would not have.
        subprocess.run(pip + ['uninstall', '--yes', '--quiet', 'setuptools'], env=environ, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


if __name__ == '__main__':
    main()
