# `python -m ssdcompare`: Ctrl-C from the first line on ends quietly (see ssdcompare.cli.entry)
try:
    from ssdcompare.cli.entry import main
except BaseException as err:  # an interrupt may come wrapped in another exception
    if isinstance(err, SystemExit):
        raise
    from ssdcompare.errors import interrupted

    if not interrupted(err):
        raise
    raise SystemExit(130) from None

main()
