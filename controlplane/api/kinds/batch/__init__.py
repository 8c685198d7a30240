"""The `batch/v1` kinds: Job and CronJob."""
