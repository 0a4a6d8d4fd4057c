"""Where and how a run process starts: the `run-one` command line, the
warm fork server and the executors."""
