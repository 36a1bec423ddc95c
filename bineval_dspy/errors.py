"""The one exception type for user mistakes: the CLI prints its message as a single line."""


class InputError(ValueError):
    """Bad user input (file, line, field named in the message); never shown as a traceback."""
