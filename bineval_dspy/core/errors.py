"""The one exception type for user mistakes: the CLI prints its message as a single line."""


class InputError(ValueError):
    """Bad user input (file, line, field named in the message); never shown as a traceback."""


def one_line(exc: BaseException) -> str:
    """An exception as one short line, for verdict explanations and run records."""
    text = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]
