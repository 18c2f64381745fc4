"""The one exception type that core code raises for problems a user can act on."""


class SsdcompareError(Exception):
    """A problem the user can fix; the message says what happened and what to do next.

    The CLI prints the message without a traceback; library users (e.g. Jupyter) catch it.
    """
