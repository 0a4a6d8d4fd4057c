"""Records and tables: the results table and its readers, the verdict
vocabulary, the noise panel, JSON results. The lowest floor of `stats`: imports nothing
of it."""
