# `python -m ssdcompare`: Ctrl-C from the first line on ends quietly (see ssdcompare.entry)
try:
    from ssdcompare.entry import main
except KeyboardInterrupt:
    raise SystemExit(130) from None

main()
