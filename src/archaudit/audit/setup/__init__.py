"""The audit file: `AuditSpec` (spec), the protocol checks, the sequential
loop's options and the starter file. The lowest floor of `audit`."""
