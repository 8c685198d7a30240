"""The Kubernetes streaming wire protocols, shared by both of their ends.

The runtime's streaming server (runtime/streaming) speaks them as a server
and skiffctl (controlplane/cli/streamclient.py) as a client, so the pieces
both need live here, in the floor, where every layer may import them
(plain Python: nothing here is generated from a .proto): SPDY/3.1 framing
and header compression (spdy_frames.py), the threaded session (spdy.py,
either role), what both codecs read from and raise (transport.py), the
WebSocket codec and channel demultiplexer (websocket.py), the remote-command
stream names, protocol versions, resize messages and metav1.Status bodies
(remotecommand.py, status.py), and the port-forward header names
(portforward.py), the two halves of a port-forward copy (pump.py) and the
server side of an HTTP/1.1 upgrade with the strict request-head reader every
endpoint that takes requests from outside uses (upgrade.py).

This package must never run commands, dial ports or know about containers:
it turns bytes into frames and back, and hands an upgraded socket to its
owner.
"""
