# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Text a person reads, with every character that acts on a terminal instead of showing made
visible, so the text a reviewer sees is the text that is there.

Ids, paths and content come from producers and from whatever is at a destination, and they reach
a terminal through `--diff` output, failure messages, warnings and results: an `ESC[1A ESC[2K`
in an id would erase a line of the diff above it, a BEL rings, a CR or backspace overwrites what
was printed, U+202E turns the rest of a line around. Escaped, as `ls -b` and Python's repr write
them:

- C0 controls, DEL and C1 controls (U+0080 to U+009F: U+009B is a CSI on terminals that take
  8-bit controls): `\\x1b`, `\\x7f`, `\\x9b`. Only a content diff keeps its newlines and tabs.
- format characters (Unicode category Cf: the bidirectional overrides and isolates such as
  U+202E, zero-width spaces and joiners, U+FEFF) and the line and paragraph separators U+2028
  and U+2029: `\\u202e`.
- bytes of a name that are not UTF-8, which backends carry as lone surrogates (Python's
  surrogateescape) and no JSON result can hold: the byte, `caf\\xe9.html`; other lone
  surrogates as `\\udc00`.

A backslash itself is left as it is, so `\\x1b` typed in a file shows the same as an escaped ESC:
the escape makes a hidden character visible, not the text reversible. Every other character,
letters and emoji of any script, is shown as it is.
"""

from __future__ import annotations

import re
import unicodedata

ESCAPED_CATEGORIES = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs"))
# Printable ASCII is never escaped; everything else is looked at one character at a time.
_CANDIDATE = re.compile(r"[^\x20-\x7e]")
_NOT_UTF8 = range(0xDC80, 0xDD00)


def visible(text: str, keep: str = "") -> str:
    """`text` with control and format characters escaped, except those in `keep` (a content
    diff keeps "\\n\\t": Ansible's diff shows its lines)."""
    if text.isascii() and text.isprintable():
        return text
    return _CANDIDATE.sub(lambda match: _escape(match.group(), keep), text)


def _escape(char: str, keep: str) -> str:
    if char in keep or unicodedata.category(char) not in ESCAPED_CATEGORIES:
        return char
    code = ord(char)
    if code in _NOT_UTF8:
        return "\\x%02x" % (code - 0xDC00)
    if code <= 0xFF:
        return "\\x%02x" % code
    return "\\u%04x" % code if code <= 0xFFFF else "\\U%08x" % code
