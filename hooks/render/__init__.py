"""The render layer: plain functions of Markdown or HTML and the page's language, no MkDocs
import. ``markdown.render_markdown`` expands a page's placeholders; the other modules rewrite
the built HTML (comments, typography, interface strings, inline code, the verification note).
Each raises RenderError naming the file and the key."""
