"""bird/escape.py on each kind of sequence and character it removes or escapes, with text it must keep as the
positive control (the commands that print recorded text: tests/received/test_received_output.py)."""

from __future__ import annotations

import pytest

from bird.escape import csv_cell, markdown, printable, terminal


@pytest.mark.parametrize(("text", "shown"), [
    ("a\x1b]52;c;ZWNobw==\x07b", "ab"),           # OSC ended by BEL (OSC 52 writes the clipboard)
    ("a\x1b]0;title\x1b\\b", "ab"),                # OSC ended by ST, the ST's backslash too
    ("a\x1b]8;;http://x\x1b]8;;\x07b", "ab"),      # an OSC cut by the next one: both go
    ("a\x1b]0;never ended", "a"),                  # an OSC never ended runs to the end
    ("a\x1b[31;1mred\x1b[0mb", "aredb"),           # CSI with parameters
    ("a\x1b[2 qb", "ab"),                          # CSI with an intermediate byte
    ("a\x1b[?25lb", "ab"),                         # CSI with a private parameter
    ("a\x1b[12", "a"),                             # CSI cut short
    ("a\x1bcb", "ab"),                             # a two-character escape (RIS)
    ("a\x1b", "a"),                                # a lone ESC
    ("a\x00b\x07c\x7fd", "abcd"),                  # C0 and DEL controls
    ("a\u202eb\u200bc\u2066d", "abcd"),            # bidi override, zero-width space, isolate (format characters)
    ("a\x85b", "ab"),                              # a C1 control
])
def test_printable_removes_whole_escape_sequences_and_control_and_format_characters(text, shown):
    assert printable(text) == shown


def test_printable_keeps_letters_symbols_and_spaces_of_any_script():
    text = "héllo 中文 😀 a\u00a0b [x](y) <b> ~!@#$%^&*()_+{}|:\"?"
    assert printable(text) == text


def test_tabs_and_line_ends_become_spaces_and_newlines_stay_only_when_asked():
    assert printable("a\tb\rc\nd") == "a b c d"
    assert printable("a\tb\rc\nd", newlines=True) == "a b c\nd"


def test_terminal_prints_any_value_as_text_with_its_lines():
    assert terminal(12) == "12"
    assert terminal("a\nb\x1b[0m\tc") == "a\nb c"


def test_markdown_is_one_line_with_html_entities_and_link_code_and_table_characters_escaped():
    assert markdown("<b>&x</b>") == "&lt;b&gt;&amp;x&lt;/b&gt;"
    assert markdown("[x](y) `c` a|b \\") == "\\[x\\](y) \\`c\\` a\\|b \\\\"
    assert markdown("two\nlines\x1b[2J") == "two lines"
    assert markdown(3.5) == "3.5"


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_a_csv_cell_that_a_spreadsheet_would_read_as_a_formula_gets_an_apostrophe(start):
    assert csv_cell(f"{start}HYPERLINK(1)") == f"'{start}HYPERLINK(1)"


@pytest.mark.parametrize("value", ["a=b", "", "hopper", 5, -1.5, None])
def test_other_csv_cells_are_returned_as_they_are(value):
    assert csv_cell(value) == value
