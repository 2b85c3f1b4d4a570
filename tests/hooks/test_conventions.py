"""The conventions between a page's languages (hooks/checks/conventions.py): code blocks are includes
of snippets/ (or marked inline examples), the same in every language, in the same order; the
same heading anchors. Each refusal names the file and the line."""

from __future__ import annotations

import pytest

from hooks.checks.conventions import check_page_conventions
from hooks.errors import RenderError

PAGE = """---
title: x
---

# Titolo { #top }

```bash
--8<-- "checks/topology.sh"
```

=== "Scheda"

    ```python title="train.py"
    --8<-- "train.py"
    ```

## Sezione { #section }

```{ .text .inline-example }
$ nvidia-smi
```
"""


def write(tmp_path, it: str, fr: str):
    (tmp_path / "page.it.md").write_text(it, encoding="utf-8")
    (tmp_path / "page.fr.md").write_text(fr, encoding="utf-8")
    return tmp_path


def test_the_same_includes_and_anchors_pass(tmp_path):
    french = PAGE.replace("Titolo", "Titre").replace("Sezione", "Section").replace('"Scheda"', '"Onglet"')
    check_page_conventions(write(tmp_path, PAGE, french), ("it", "fr"))


def test_a_code_block_typed_into_a_page_is_refused_with_its_line(tmp_path):
    typed = PAGE.replace('--8<-- "checks/topology.sh"', "nvidia-smi topo -m")
    with pytest.raises(RenderError, match=r"^docs/page\.it\.md:7: a code block typed into the page"):
        check_page_conventions(write(tmp_path, typed, typed), ("it", "fr"))


def test_the_languages_include_the_same_files_in_the_same_order(tmp_path):
    swapped = (
        PAGE.replace("checks/topology.sh", "SWAP")
        .replace('"train.py"', '"checks/topology.sh"')
        .replace("SWAP", "train.py")
    )
    with pytest.raises(
        RenderError,
        match=r"^docs/page\.fr\.md:7: code block '--8<-- \"train\.py\"' where docs/page\.it\.md:7 has "
        r"'--8<-- \"checks/topology\.sh\"'",
    ):
        check_page_conventions(write(tmp_path, PAGE, swapped), ("it", "fr"))
    extra = PAGE + '\n```bash\n--8<-- "checks/first_minutes.sh"\n```\n'
    with pytest.raises(
        RenderError, match=r"^docs/page\.fr\.md:23: code block .*first_minutes\.sh.* has none in docs/page\.it\.md"
    ):
        check_page_conventions(write(tmp_path, PAGE, extra), ("it", "fr"))
    other_example = PAGE.replace("$ nvidia-smi", "$ nvidia-smi -L")
    with pytest.raises(
        RenderError, match=r"^docs/page\.fr\.md:19: code block '\$ nvidia-smi -L' where docs/page\.it\.md:19"
    ):
        check_page_conventions(write(tmp_path, PAGE, other_example), ("it", "fr"))


def test_heading_anchors_are_the_same_in_every_language(tmp_path):
    renamed = PAGE.replace("{ #section }", "{ #sezione }")
    with pytest.raises(
        RenderError, match=r"^docs/page\.fr\.md:17: heading anchor '#sezione' where docs/page\.it\.md:17 has '#section'"
    ):
        check_page_conventions(write(tmp_path, PAGE, renamed), ("it", "fr"))
    # without { #id } the anchor is toc's slug of the text, which a translation changes
    untagged = PAGE.replace(" { #section }", "")
    with pytest.raises(
        RenderError, match=r"^docs/page\.fr\.md:17: heading anchor '#section' where docs/page\.it\.md:17 has '#sezione'"
    ):
        check_page_conventions(write(tmp_path, untagged, untagged.replace("Sezione", "Section")), ("it", "fr"))
