"""The built-in ingress controller's data plane: HAProxy on every node.

`model.py` turns Ingresses into routes, backends and certificates,
`haproxy.py` renders them as HAProxy's configuration and runs HAProxy, and
`controller.py` (`IngressController`) keeps it current from informers.
"""
