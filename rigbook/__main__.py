from rigbook.cli.entry import main

main()
