# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each module does, end to end: publish, prune, reconcile-state, state info, a release
switch; the adapter between them and Ansible's module shell.
"""
