"""The judge: a family of arms judged against a baseline (`judge`), its
grade, the sequential loop's states and the words of a verdict. Above the tests and
the simulations it calibrates with; below the analyses built on its judgements."""
