"""`archaudit stats ...` and `archaudit simulate-null`: the judging half of the protocol, one
module per command.

    archaudit stats SOURCE [...]                       verdicts (same as `stats verdicts`)
    archaudit stats transfer|interactions|scaling|power|decoupling|items|aggregate|snr|predict
    archaudit simulate-null --n-arms M --seeds K --audits N [...]

`common` holds the `stats` group and what the commands share; each command reads the findings
record (`archaudit.audit.results.findings`) and renders it. Library imports happen inside the
commands so that `archaudit --help` stays fast.
"""
