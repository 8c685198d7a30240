"""The core group (`v1`): pods, services, config, storage claims, nodes, namespaces, events."""
