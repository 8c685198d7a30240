"""The API server: registry semantics, admission, watch fan-out, auth and TLS, gRPC servicers."""
