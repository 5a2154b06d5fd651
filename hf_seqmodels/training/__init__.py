"""Training through Accelerate: the loop (`loop`), its options (`arguments`, `argument_checks`), checkpoints
(`checkpoints`, `checkpoint_format`), checkpoint averaging (`averaging`), and the training schedules of
`scheduled_sampling` and `nt_asgd`."""
