"""API aggregation (kube-aggregator's job, inside the API server).

frontproxy.py    the request-header CA and the proxy's client certificate,
                 and the extension-apiserver-authentication ConfigMap
local.py         the local APIServices of every group/version served here
endpoints.py     an APIService's Service -> its endpoints' URLs, or why not
availability.py  keeps each APIService's Available condition and the
                 table the proxy and discovery read
proxy.py         /apis/<group>/<version>/... of a delegated APIService,
                 forwarded with the caller's identity in X-Remote-* headers
(rest/delegated.py merges the delegated groups into discovery)
"""
