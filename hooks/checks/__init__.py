"""Checks that a page, a file or a build keeps the guide's promises: each raises RenderError
with one line naming the file (and the line where it can). No MkDocs import: the glue passes
plain values."""
