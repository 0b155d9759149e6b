"""The edits a fix becomes in an editor (np2torch.server.edits): applied as an editor applies them, they give the
fixed text, whatever the line endings, with or without a final newline."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from np2torch.server.edits import line_edits, line_start, line_texts, spans

LINES = st.lists(st.tuples(st.sampled_from(["", "x = 1", "y = np.exp(x)", "\U0001d535 = 2", "\f"]),
                           st.sampled_from(["\n", "\r\n", "\r"])), max_size=6)


def text_of(lines: list[tuple[str, str]], final: bool) -> str:
    text = "".join(body + end for body, end in lines)
    return text if final or not lines else text[: -len(lines[-1][1])]


def offset(text: str, line: int, column: int) -> int:
    """An editor's (line, character) position in ``text``: lines end at \\r\\n, \\r or \\n, as in the LSP."""
    starts = [0, *(m.end() for m in re.finditer(r"\r\n|\r|\n", text))]
    return starts[line] + column


def apply(old: str, new: str) -> str:
    text = old
    for edit in reversed(line_edits(old, new)):
        start, end = offset(old, *line_start(old, edit.start)), offset(old, *line_start(old, edit.end))
        text = text[:start] + edit.text + text[end:]
    return text


@given(LINES, st.booleans(), LINES, st.booleans())
def test_the_edits_turn_the_old_text_into_the_new(old: list, old_final: bool, new: list, new_final: bool) -> None:
    before, after = text_of(old, old_final), text_of(new, new_final)
    assert apply(before, after) == after


def test_only_changed_lines_are_replaced() -> None:
    old = "import numpy as np\n\ny = np.exp(x)\nz = 1\n"
    new = "import numpy as np\nimport np2torch.runtime as np2t\n\ny = np2t.exp(x)\nz = 1\n"
    assert [(e.start, e.end, e.text) for e in line_edits(old, new)] == [
        (1, 1, "import np2torch.runtime as np2t\n"), (2, 3, "y = np2t.exp(x)\n")]


def test_past_the_last_line_without_a_final_newline_is_its_end() -> None:
    assert line_start("a\nbc", 2) == (1, 2)
    assert line_start("a\nbc\n", 2) == (2, 0)
    assert line_texts("a\r\nb\rc\n") == ["a", "b", "c", ""]


@given(LINES, st.booleans(), LINES, st.booleans(), LINES)
def test_spans_are_the_edits_with_their_positions(head: list, final: bool, middle: list, new_final: bool,
                                                  tail: list) -> None:
    before = text_of(head + tail, final)
    after = text_of(head + middle + tail, new_final)
    assert spans(before, after) == [(line_start(before, e.start), line_start(before, e.end), e.text)
                                    for e in line_edits(before, after)]


def test_lines_both_texts_share_at_either_end_are_no_edit() -> None:
    old = "".join(f"x{n} = 1\n" for n in range(1000))
    new = old.replace("x500 = 1\n", "x500 = 2\n")
    assert [(e.start, e.end, e.text) for e in line_edits(old, new)] == [(500, 501, "x500 = 2\n")]
