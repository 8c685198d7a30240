"""The Kubernetes streaming wire protocols, shared by both of their ends.

The runtime's streaming server (runtime/streaming) speaks them as a server
and skiffctl (controlplane/cli/streamclient.py) as a client, so the pieces
both need live here, where every layer may import them: SPDY/3.1 framing
and header compression (spdy_frames.py), the threaded session (spdy.py,
either role), what both codecs read from and raise (transport.py), the
WebSocket codec and channel demultiplexer (websocket.py), the remote-command
stream names, protocol versions, resize messages and metav1.Status bodies
(remotecommand.py, status.py), and the port-forward header names
(portforward.py). Plain Python: nothing here is generated from a .proto.

This package must never run commands, dial ports, serve HTTP or know about
containers: it only turns bytes into frames and back.
"""
