from ssdcompare.cli import main

main()
