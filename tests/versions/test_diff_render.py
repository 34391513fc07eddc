"""The diff renderers (`cfgtool/versions/diff_render.py`): golden text, the markdown PR comment's layout,
caps and size limit, and escaping; on real diffs and on large diffs built directly."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from cfgtool.hocon import Origin
from cfgtool.versions.diff import Diff, KeyChange, ValueChange, _group, diff
from cfgtool.versions.diff_render import render_markdown, render_text
from cfgtool.versions.sides import Side

if TYPE_CHECKING:
    from tests.conftest import GitRepo
    from tests.versions.conftest import Versioned

DAYS_60 = 5_184_000_000
DAYS_90 = 7_776_000_000


def small(store_repo: GitRepo, before: dict[str, str], after: dict[str, str | None]) -> Diff:
    store_repo.write(before, under="store/")
    store_repo.commit("before")
    store_repo.write(after, under="store/")
    store_repo.commit("after")
    return diff(store_repo.root, "HEAD~1", "HEAD")


def test_diff_text_golden(store_repo: GitRepo) -> None:
    found = small(
        store_repo,
        {"main.conf": "retention = 7d\nowner = a\n", "data/main.conf": "", "tags/t/main.conf": "retention = 30d\n"},
        {
            "tags/t/main.conf": "retention = 90d\n",
            "data/x/main.conf": "owner = b\n",
            "data/x/includes": "/tags/t\n",
            "data/y/includes": "/tags/t\n",
        },
    )
    a, b = found.a.commit or "", found.b.commit or ""
    assert render_text(found) == (
        f"diff HEAD~1 ({a[:7]}) -> HEAD ({b[:7]})\n"
        "keys: 1 changed, 2 added, 0 removed (5 values)\n"
        "\n"
        "Summary:\n"
        '  retention (unset) -> "90d" in 2 keys, via /tags/t\n'
        '  owner (unset) -> "a" in 1 key, via /\n'
        '  owner (unset) -> "b" in 1 key, via its own main.conf\n'
        '  retention "30d" -> "90d" in 1 key, via its own main.conf\n'
        "\n"
        "+ /data/x\n"
        '    retention: "90d"   store/tags/t/main.conf:1:13\n'
        '    owner: "b"   store/data/x/main.conf:1:9\n'
        "\n"
        "+ /data/y\n"
        '    retention: "90d"   store/tags/t/main.conf:1:13\n'
        '    owner: "a"   store/main.conf:2:9\n'
        "\n"
        "~ /tags/t\n"
        '    retention: "30d" -> "90d"   store/tags/t/main.conf:1:13\n'
    )


# ------------------------------------------------------------------------------------------ markdown


def synthetic(keys: int, values: int = 3) -> Diff:
    """A large diff built directly: `keys` changed keys, each with `values` values from one tag."""
    origin = Origin("store/tags/t/main.conf", 3, 5)
    changes = [
        KeyChange(
            f"/data/group{i // 100:03d}/dataset{i:06d}",
            "changed",
            tuple(ValueChange(f"v{j}.deep.path", j, j + 1, origin, "/tags/t") for j in range(values)),
        )
        for i in range(keys)
    ]
    changes.append(KeyChange("/data/odd", "changed", (ValueChange("a|b", "x`y", "p|q", None, None),)))
    side_a, side_b = Side("v1", "config/v1", "a" * 40, 1), Side("main", "main", "b" * 40)
    return Diff(side_a, side_b, tuple(changes), _group(changes))


def balanced(markdown: str) -> bool:
    return markdown.count("<details>") == markdown.count("</details>")


def test_render_markdown_summary_table_comes_first_and_details_are_folded() -> None:
    text = render_markdown(synthetic(5))
    assert text.index("| Change | Keys | Via |") < text.index("<details>")
    assert "| `v0.deep.path`: `0` → `1` | 5 | `/tags/t` |" in text
    assert text.count("<details>") == 2 and balanced(text)
    assert "**6** keys changed" in text


def test_render_markdown_caps_long_lists_with_totals() -> None:
    text = render_markdown(synthetic(200), max_group_keys=10, max_rows=20, max_groups=2)
    assert "… and 190 more" in text
    assert "… 2 more changes (201 values)" in text
    assert "… 581 more values not shown" in text
    assert "Run `cfgtool diff v1 main` for the full list." in text
    assert balanced(text)


def test_render_markdown_stays_under_the_github_comment_limit() -> None:
    big = synthetic(20_000, values=5)
    text = render_markdown(big, max_rows=100_000, max_group_keys=100_000)
    assert len(text) <= 60_000 and balanced(text) and text.endswith("</details>\n")
    tiny = render_markdown(big, max_chars=4_000)
    assert len(tiny) <= 4_000 and balanced(tiny)


def test_render_markdown_escapes_pipes_and_backticks_in_cells() -> None:
    text = render_markdown(synthetic(1))
    row = next(line for line in text.splitlines() if "a\\|b" in line and line.startswith("| `a"))
    assert '``"x`y"``' in row and '`"p\\|q"`' in row
    assert len(re.findall(r"(?<!\\)\|", row)) == 4  # the cells' own separators only


def test_render_markdown_of_a_real_diff(versioned: Versioned) -> None:
    text = render_markdown(diff(versioned.root, "v1", "v2"))
    assert "`/tags/retention/LONG`" in text and "own main.conf" in text
    assert f"`{DAYS_90}` → `{DAYS_60}`" in text and balanced(text)
