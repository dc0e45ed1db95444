"""The one exception family the library raises for bad input."""

__all__ = ["InputError"]


class InputError(ValueError):
    """Bad input: the message names the parameter, the value given and what is allowed.

    The command line turns it into one line on stderr and exit status 2.
    """
