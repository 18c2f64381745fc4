"""The console command's entry point: Ctrl-C while the program is still loading ends quietly.

Kept tiny on purpose: only what this module imports (the standard signal and sys modules and
ssdcompare.errors) can be interrupted before the handler below is in place.
"""

import signal
import sys

from ssdcompare.errors import interrupted


def main() -> None:
    """`ssdcompare ...` and `python -m ssdcompare ...`.

    Ctrl-C while the program loads is held back until loading is done, then ends it: an
    interrupt landing inside a library's import can surface as some other error of that
    library's (or none at all).
    """
    held: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    except KeyboardInterrupt:  # Ctrl-C before the handler above took its place
        sys.stderr.write("interrupted\n")
        raise SystemExit(130) from None
    try:
        from ssdcompare.cli.commands import main as cli_main
    except BaseException as err:
        if not interrupted(err):
            raise
        held.append(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)  # an ignored SIGINT (e.g. `cmd &`) stays so
    if held:
        sys.stderr.write("interrupted\n")
        raise SystemExit(130)
    cli_main()
