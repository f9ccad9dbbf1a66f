# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Nothing raw reaches a terminal: control and format characters in ids, paths and content are
shown escaped, by one function, at every place text is shown (listings, results, messages)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.adapter import plain, shown
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.report import listing
from ansible_collections.distributor.core.plugins.module_utils._distributor.visible import visible

from builders import manifest, shared_state

HIDE_A_LINE = "\x1b[1A\x1b[2K"


@pytest.mark.parametrize("raw, seen", [
    ("id" + HIDE_A_LINE, "id\\x1b[1A\\x1b[2K"),                  # ESC: cursor up, erase the line
    ("ring\x07", "ring\\x07"),                                   # BEL
    ("over\rwritten", "over\\x0dwritten"),                       # CR
    ("back\x08space", "back\\x08space"),                         # backspace
    ("nul\x00", "nul\\x00"),
    ("del\x7f", "del\\x7f"),
    ("csi\x9b2K", "csi\\x9b2K"),                                 # C1 CSI, a terminal's 8-bit ESC [
    ("osc\x1b]0;title\x07", "osc\\x1b]0;title\\x07"),
    ("\u202egnp.exe", "\\u202egnp.exe"),                          # right-to-left override
    ("zero\u200bwidth", "zero\\u200bwidth"),
    ("line\u2028separator", "line\\u2028separator"),
    ("tag\U000e0041", "tag\\U000e0041"),
    ("caf\udce9.html", "caf\\xe9.html"),                          # a byte that is not UTF-8
    ("new\nline\ttab", "new\\x0aline\\x09tab"),
])
def test_control_and_format_characters_are_escaped(raw, seen):
    assert visible(raw) == seen


@pytest.mark.parametrize("text", ["plain ASCII ~ with \\x1b typed as text", "café Ünïcödé", "日本語のページ",
                                  "emoji 🎉", "مرحبا", ""])
def test_printable_text_of_any_script_is_shown_as_it_is(text):
    assert visible(text) == text


def test_a_content_diff_keeps_its_lines_and_tabs_and_escapes_the_rest():
    assert visible("a\tb\r\n" + HIDE_A_LINE + "c\n", "\n\t") == "a\tb\\x0d\n\\x1b[1A\\x1b[2Kc\n"


def test_listing_fields_from_a_record_can_neither_start_a_line_nor_move_the_cursor():
    state = shared_state(("reports", "archive", manifest(id="src" + HIDE_A_LINE), ["a.html"]),
                         ("ev\nfake.html  sha256:0  1  x" + HIDE_A_LINE, "archive", manifest(), ["e\u202e.html"]))
    text = listing(state, "/srv/www/.distributor.json")
    assert "\x1b" not in text and "\u202e" not in text
    assert "source src\\x1b[1A\\x1b[2K" in text and "ev\\x0afake.html  sha256:0  1  x\\x1b[1A\\x1b[2K/archive" in text
    assert len(text.splitlines()) == 1 + 2 + 2  # header, two owners, two outputs
    assert "e\\u202e.html  sha256:" in text


def test_results_and_messages_leave_the_module_escaped():
    result = shown({"msg": "owner ev" + HIDE_A_LINE, "changes": [{"path": "a\x9b.html"}], "count": 3})
    assert result == {"msg": "owner ev\\x1b[1A\\x1b[2K", "changes": [{"path": "a\\x9b.html"}], "count": 3}


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4), max_leaves=12)


@given(JSON_VALUES)
def test_a_result_taken_as_plain_is_one_shown_would_not_change(value):
    # run_module skips the walk over a result `plain` accepts: it must never skip one that holds
    # a character `shown` escapes.
    if plain(value):
        assert shown(value) == value


def test_a_result_with_anything_to_escape_is_not_plain():
    assert plain({"written": ["a.html", "b.html"], "changes": [{"path": "a.html", "before": None}]})
    for hidden in ("\x1b[2K", "\x7f", "\x9b", "\u202e", "caf\udce9", "\n"):
        assert not plain({"written": ["a" + hidden]})
        assert not plain({"id" + hidden: 1})
