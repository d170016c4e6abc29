"""The pure rendering helpers: escaping, clipping, page bounds, durations, footers."""

from __future__ import annotations

import pytest

from jupyter_scratchpad.widgets._render import (
    MAX_PAGE_CHARS,
    clip,
    fmt_duration,
    numbered_html,
    page_count,
    pre_html,
    strip_footer,
    table_html,
)


def test_spilled_content_is_escaped_never_rendered_as_html() -> None:
    hostile = "<script>alert('x')</script><img src=x onerror=alert(1)>"
    for rendered in (table_html(["<b>col</b>"], [[hostile]]), pre_html(hostile), numbered_html([hostile])):
        assert "<script>" not in rendered and "<img" not in rendered and "<b>col" not in rendered
        assert "&lt;script&gt;" in rendered


def test_clip_keeps_the_head_and_the_tools_closing_hint() -> None:
    value = "x" * 5000 + ' [+12 more lines: get_in(path="$.items[3].log")]'
    cut = clip(value, 700)
    assert len(cut) < 760
    assert cut.startswith("x" * 500) and cut.endswith('get_in(path="$.items[3].log")]')
    assert "chars not shown" in cut
    assert clip("short", 700) == "short"


def test_a_page_is_bounded_whatever_its_size() -> None:
    lines = ["y" * 1000] * 5000  # 5 MB of lines asked for in one page
    page = numbered_html(lines)
    assert len(page) < MAX_PAGE_CHARS + 1000 and "more lines or rows not shown" in page
    table = table_html(["a", "b"], [["z" * 600, 1]] * 5000)
    assert len(table) < MAX_PAGE_CHARS + 1000


@pytest.mark.parametrize(("total", "size", "pages"), [(0, 10, 1), (1, 10, 1), (10, 10, 1), (11, 10, 2), (4000, 30, 134)])
def test_page_count(total: int, size: int, pages: int) -> None:
    assert page_count(total, size) == pages


@pytest.mark.parametrize(("seconds", "text"), [(0, "0 s"), (59.9, "59 s"), (60, "1 min"), (3599, "59 min"),
                                               (3600, "1 h"), (3900, "1 h 5 min"), (86_400 * 3, "3 d"), (-5, "0 s")])
def test_fmt_duration(seconds: float, text: str) -> None:
    assert fmt_duration(seconds) == text


def test_strip_footer_only_strips_a_token_footer() -> None:
    text = "     1\ta\n--- lines 1-1 of 1 · tokens: 5 this call, 10 used, 90 remaining ---"
    assert strip_footer(text) == "     1\ta"
    assert strip_footer("     1\t--- a line of the data ---") == "     1\t--- a line of the data ---"
    assert strip_footer("a\n--- not a footer ---") == "a\n--- not a footer ---"
