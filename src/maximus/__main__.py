from maximus.cli.app import main

main()
