"""`python -m archaudit ...`, the form `torchrun -m archaudit train ...` needs."""

from archaudit.cli import main

main()
