"""`archaudit replicate`: the literature's claims as audits, trained,
judged and costed (the claim files are in replications/)."""
