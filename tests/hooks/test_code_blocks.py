"""Code blocks are found in rendered HTML the way pymdownx.highlight writes them."""

from __future__ import annotations

import markdown
import pytest

from hooks.code_blocks import code_blocks, titled_block
from hooks.errors import RenderError

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
    return markdown.markdown(SOURCE, extensions=["pymdownx.highlight", "pymdownx.superfences", "pymdownx.inlinehilite"],
                             extension_configs={"pymdownx.highlight": {"pygments_lang_class": True}})


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
    with pytest.raises(RenderError, match=r"code block 'train\.py': no end of code block"):
        titled_block(broken[:broken.index("<p><code")], "train.py")
    with pytest.raises(RenderError, match="no end of code block"):
        list(code_blocks(broken[:broken.index("<p><code")]))
