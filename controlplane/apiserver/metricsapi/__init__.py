"""The metrics API built in (metrics.k8s.io/v1beta1), as k3s bundles metrics-server.

    collector.py   scrapes every node's agent Stats each resolution period and
                   keeps the last two samples of each node, pod and container
    objects.py     NodeMetrics and PodMetrics from those samples: CPU as the
                   rate of the cumulative counter over the window between the
                   two samples, memory the working set of the newer one
The REST side is rest/metrics_api.py; the group is registered as the local
APIService v1beta1.metrics.k8s.io, which an installed metrics-server replaces.
"""
