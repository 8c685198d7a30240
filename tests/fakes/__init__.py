"""In-memory fakes of skiff's component boundaries, for unit tests."""
