"""discovery.k8s.io: EndpointSlice (discovery.k8s.io/v1)."""
