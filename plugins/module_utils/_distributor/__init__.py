# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The distributor core: private to the distributor.core collection, no Ansible imports."""
