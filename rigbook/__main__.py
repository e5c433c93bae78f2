from rigbook.cli.app import main

main()
