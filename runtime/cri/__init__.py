"""The CRI runtime.v1 services: one module per RPC, a thin servicer that
delegates to them, and the one table of domain error -> gRPC status code."""
