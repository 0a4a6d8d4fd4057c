"""Running an audit: the runner, the coordinator and its dispatch, the
sequential loop, the trackers, `demo`, `tune-baseline`, `rerun` and the stress runs."""
