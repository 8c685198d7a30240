"""The Kubernetes REST API: a second wire format over the same Registry.

kubectl, client libraries and operators speak this; skiff's own parts keep
the gRPC API. Every request is authenticated by `authn.authenticate` and
handed to the Registry (validation, defaults, admission, authorization,
storage) or the Broadcaster (watch), exactly as the gRPC servicers do: this
package only translates HTTP and JSON, it never holds a rule of its own.

Modules: server (the listener and its thread), frontdoor (one port for both
APIs: TLS ALPN or the HTTP/2 preface picks gRPC or REST), app (routing and
the per-request wrapper), paths (URL -> kind), discovery, body (reading and
decoding request bodies), status (errors as metav1.Status), objects (CRUD),
lists, watch, patch, subresources.
"""
