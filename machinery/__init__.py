"""The floor under runtime, agent and controlplane: what all three use and
none of them owns.

- `libc`: the one binding of the C library (and libseccomp) through ctypes:
  the syscalls Python lacks, loaded lazily so the CNI plugin starts fast.
- `atomicfile`: the one home of os.replace/os.rename: the durable atomic
  writer, the credential writer (0600 from creation) and the renames that
  publish a prepared file, directory or symlink.
- `rfc3339` and `clock`: Kubernetes' time formats and the injectable clock.
- `apierrors`: the one API error table (kind, Kubernetes reason, HTTP code,
  gRPC code, retryable) every server and client derives its own from.
- `rpc_errors`: what a failed gRPC call said.
- `podresources`: how a pod's containers add up to what it asks for (the
  agent's admission and the scheduler).
- `certificates`: the one X.509 certificate builder (keys, certificates,
  signing requests) behind every PKI and self-signed certificate.
- `x509read`: what a certificate or signing request says (dates, names),
  read from its DER without `cryptography`.
- `inchild`: one function call in a short-lived child, so that what it
  imports (`cryptography`, for `certificates`) never loads into a
  long-lived process; `certrequest` makes a key and signing request so.
- `wakeloop`: a loop on a background thread that a wake-up runs early and
  stop ends (the API server's aggregator and metrics collector).
- `onecpu`: a process's threads kept on one CPU at a time (they share one
  GIL; handing it between CPUs cost `skiff controlplane` a third of its
  CPU), and children started with the CPUs it had.
- `serverthread`: a socket server on a daemon thread of its own (the
  /metrics server and the components' secure port).
- `streaming`: the Kubernetes streaming wire protocols (SPDY/3.1, WebSocket,
  remote command, port-forward), spoken by both of their ends.

This package imports nothing of runtime, agent, controlplane or proto (an
import-linter contract keeps it so), and nothing here decides policy: the
callers do. Importing the package itself costs nothing: each module loads
what it needs, so the CNI plugin pays only for what it calls.
"""
