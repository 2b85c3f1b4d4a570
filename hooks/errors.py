"""The one error type of the render layer."""


class RenderError(Exception):
    """Bad input for a render function: the message names the file and the problem."""
