"""The one error type of the render layer."""


class RenderError(Exception):
    """Bad input for a render function: the message names the file and the problem.
    ``written``: the text as the page wrote it (a placeholder, an include), from which the
    error boundary finds the page's line."""

    def __init__(self, message: str, written: str | None = None):
        super().__init__(message)
        self.written = written
