"""skiff's control plane: API server, storage, client library, scheduler,
controllers and the skiffctl CLI. It never imports the agent or runtime."""
