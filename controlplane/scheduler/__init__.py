"""The scheduler: queue, cache, framework with its plugins, and the component
that binds pending pods to nodes through the API server."""
