from ssdcompare.entry import main

main()
