"""The console command's entry point: Ctrl-C while the program is still loading ends quietly.

Kept tiny on purpose: only what this module imports can be interrupted before the handler
below is in place.
"""

import sys


def main() -> None:
    """`ssdcompare ...` and `python -m ssdcompare ...`."""
    try:
        from ssdcompare.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        raise SystemExit(130) from None
    cli_main()
