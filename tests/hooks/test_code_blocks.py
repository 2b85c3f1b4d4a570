"""Code blocks are found in rendered HTML the way pymdownx.highlight writes them."""

from __future__ import annotations

import markdown
import pytest

from hooks.errors import RenderError
from hooks.render.code_blocks import code_blocks, titled_block

SOURCE = '''Testo.

```python title="train.py"
x = 1  # uno
```

`inline`

```bash
echo "</div>"
```
'''


@pytest.fixture(scope="module")
def html() -> str:
    """Rendered by the same extensions as mkdocs.yml (no hand-written HTML)."""
    return markdown.markdown(
        SOURCE,
        extensions=["pymdownx.highlight", "pymdownx.superfences", "pymdownx.inlinehilite"],
        extension_configs={"pymdownx.highlight": {"pygments_lang_class": True}},
    )


def test_every_block_found_whole(html):
    blocks = [html[start:end] for start, end in code_blocks(html)]
    assert len(blocks) == 2
    assert all(b.startswith("<div class=") and b.endswith("</code></pre></div>") for b in blocks)
    assert "train.py" in blocks[0] and "echo" in blocks[1] and "inline" not in "".join(blocks)


def test_titled_block(html):
    start, end = titled_block(html, "train.py")
    assert html[start:end].startswith('<span class="filename">train.py</span>')
    assert html[end:].lstrip().startswith("<p>")
    assert titled_block(html, "missing.py") is None


def test_unclosed_block_is_an_error(html):
    broken = html.replace("</code></pre></div>", "</code></pre>", 1)
    with pytest.raises(RenderError, match=r"code block at offset \d+: no end of code block"):
        titled_block(broken[: broken.index("<p><code")], "train.py")
    with pytest.raises(RenderError, match="no end of code block"):
        list(code_blocks(broken[: broken.index("<p><code")]))


def test_a_title_outside_a_code_block_is_not_the_block():
    """A page's raw ``<span class="filename">train.py</span>`` above another block made the
    publish gate put its "verified" note under that block (found by text search), while the
    block with that title sat further down."""
    page = markdown.markdown(
        '<span class="filename">train.py</span>\n\n```bash\necho evil\n```\n\n' + SOURCE,
        extensions=["pymdownx.highlight", "pymdownx.superfences", "pymdownx.inlinehilite"],
        extension_configs={"pymdownx.highlight": {"pygments_lang_class": True}},
    )
    start, end = titled_block(page, "train.py")
    assert "x" in page[start:end] and "evil" not in page[start:end]
