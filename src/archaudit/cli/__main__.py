from archaudit.cli import main

main()
