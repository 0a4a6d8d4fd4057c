"""What an audit found: the one loader of results (source), the families
judged and every analysis of them (`findings`), as one record."""
