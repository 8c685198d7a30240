"""networking.k8s.io/v1 through kubectl: Ingress, IngressClass and NetworkPolicy
are served with Kubernetes' columns, defaults and validation, the default
class is filled in, and ingress-nginx's IngressClass, LoadBalancer Service and
admission webhook configuration apply beside skiff's (the webhook enforced:
with no controller behind its Service, Ingresses are refused until it goes)."""

from __future__ import annotations

import json

import pytest

from tests.harness.wait import wait_for
from tests.integration.rest.conftest import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("need_kubectl")]

# ingress-nginx's IngressClass, as its install manifest (deploy/static/provider/
# cloud/deploy.yaml) declares it, and that manifest's LoadBalancer Service.
NGINX = """
apiVersion: v1
kind: Namespace
metadata: {name: ingress-nginx, labels: {app.kubernetes.io/name: ingress-nginx}}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  labels:
    app.kubernetes.io/component: controller
    app.kubernetes.io/instance: ingress-nginx
    app.kubernetes.io/name: ingress-nginx
    app.kubernetes.io/part-of: ingress-nginx
  name: nginx
spec:
  controller: k8s.io/ingress-nginx
---
apiVersion: v1
kind: Service
metadata: {name: ingress-nginx-controller, namespace: ingress-nginx}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  ipFamilies: [IPv4]
  ipFamilyPolicy: SingleStack
  selector: {app.kubernetes.io/name: ingress-nginx}
  ports:
  - {appProtocol: http, name: http, port: 80, protocol: TCP, targetPort: http}
  - {appProtocol: https, name: https, port: 443, protocol: TCP, targetPort: https}
---
apiVersion: v1
kind: Service
metadata: {name: ingress-nginx-controller-admission, namespace: ingress-nginx}
spec:
  type: ClusterIP
  selector: {app.kubernetes.io/name: ingress-nginx}
  ports:
  - {appProtocol: https, name: https-webhook, port: 443, targetPort: webhook}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  labels:
    app.kubernetes.io/component: admission-webhook
    app.kubernetes.io/instance: ingress-nginx
    app.kubernetes.io/name: ingress-nginx
    app.kubernetes.io/part-of: ingress-nginx
  name: ingress-nginx-admission
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service:
      name: ingress-nginx-controller-admission
      namespace: ingress-nginx
      path: /networking/v1/ingresses
  failurePolicy: Fail
  matchPolicy: Equivalent
  name: validate.nginx.ingress.kubernetes.io
  rules:
  - apiGroups: [networking.k8s.io]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [ingresses]
  sideEffects: None
"""

SHOP = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop}
spec:
  tls: [{hosts: [shop.example.com], secretName: shop-tls}]
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /cart, pathType: Prefix, backend: {service: {name: cart, port: {number: 80}}}}
  - host: api.example.com
    http:
      paths:
      - {path: /v1, pathType: Exact, backend: {service: {name: api, port: {name: http}}}}
"""

POLICY = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-from-web}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: web}}}]
    ports: [{port: 5432}]
"""


def rows(cluster: Cluster, *args: str) -> list[list[str]]:
    out = cluster.kubectl("get", *args).stdout
    return [[c.strip() for c in line.split("  ") if c.strip()] for line in out.splitlines()]


def test_ingress_classes_columns_and_ingress_nginx_manifest(cluster: Cluster) -> None:
    def skiff_class() -> bool:
        return "skiff" in cluster.kubectl("get", "ingressclass", "-o", "name").stdout

    wait_for(skiff_class, timeout=30, interval=0.2, message="the built-in IngressClass skiff")
    cluster.kubectl("apply", "-f", "-", input=NGINX)
    table = rows(cluster, "ingressclass")
    assert table[0][:3] == ["NAME", "CONTROLLER", "PARAMETERS"] and table[0][-1] == "AGE"
    assert table[1][:3] == ["nginx", "k8s.io/ingress-nginx", "<none>"]
    assert table[2][:3] == ["skiff", "skiff.io/ingress-controller", "<none>"]
    svc = json.loads(cluster.kubectl("get", "svc", "-n", "ingress-nginx", "-o", "json").stdout)[
        "items"
    ][0]
    assert svc["spec"]["healthCheckNodePort"] and svc["spec"]["allocateLoadBalancerNodePorts"]
    # Its admission webhook's configuration applies, defaulted as Kubernetes does.
    hooks = rows(cluster, "validatingwebhookconfiguration")
    assert hooks[0] == ["NAME", "WEBHOOKS", "AGE"] and hooks[1][:2] == [
        "ingress-nginx-admission",
        "1",
    ]
    hook = json.loads(cluster.kubectl(
        "get", "validatingwebhookconfiguration", "ingress-nginx-admission", "-o", "json"
    ).stdout)["webhooks"][0]  # fmt: skip
    assert hook["timeoutSeconds"] == 10 and hook["clientConfig"]["service"]["port"] == 443
    assert hook["rules"][0]["scope"] == "*" and hook["objectSelector"] == {}
    # Enforced, as in Kubernetes: no ingress-nginx controller runs, so its
    # admission Service has no endpoints and failurePolicy Fail refuses Ingresses.
    early = SHOP.replace("name: shop}", "name: early}")
    refused = cluster.kubectl("apply", "-f", "-", input=early, check=False)
    assert 'failed calling webhook "validate.nginx.ingress.kubernetes.io"' in refused.stderr
    assert ('no endpoints available for service "ingress-nginx-controller-admission"'
            in refused.stderr)  # fmt: skip
    cluster.kubectl("delete", "validatingwebhookconfiguration", "ingress-nginx-admission")
    wait_for(lambda: cluster.kubectl("apply", "-f", "-", input=early, check=False).returncode == 0,
             timeout=10, interval=0.1, message="Ingresses admitted once the webhook is gone")  # fmt: skip
    cluster.kubectl("delete", "ingress", "early")
    refused = cluster.kubectl("apply", "-f", "-", check=False, input="""
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: broken}
webhooks:
- name: short.example
  admissionReviewVersions: [v2]
  clientConfig: {url: "http://hook.example.com/"}
  sideEffects: Some
""")  # fmt: skip
    assert refused.returncode != 0
    for field in ("webhooks[0].name", "webhooks[0].admissionReviewVersions",
                  "webhooks[0].clientConfig.url", "webhooks[0].sideEffects"):  # fmt: skip
        assert field in refused.stderr, refused.stderr

    # An IngressClass with parameters prints them as Kubernetes does; scope defaults.
    cluster.kubectl("apply", "-f", "-", input="""
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: tuned}
spec:
  controller: example.com/lb
  parameters: {apiGroup: k8s.example.com, kind: IngressParameters, name: external-lb}
""")  # fmt: skip
    tuned = json.loads(cluster.kubectl("get", "ingressclass", "tuned", "-o", "json").stdout)
    assert tuned["spec"]["parameters"]["scope"] == "Cluster"
    assert rows(cluster, "ingressclass", "tuned")[1][:3] == [
        "tuned", "example.com/lb", "IngressParameters.k8s.example.com/external-lb"]  # fmt: skip
    refused = cluster.kubectl(
        "patch", "ingressclass", "tuned", "-p", '{"spec":{"controller":"example.com/other"}}',
        check=False,
    )  # fmt: skip
    assert refused.returncode != 0 and "spec.controller" in refused.stderr


def test_ingress_gets_the_default_class_and_prints_kubernetes_columns(cluster: Cluster) -> None:
    wait_for(lambda: "skiff" in cluster.kubectl("get", "ingressclass", "-o", "name").stdout,
             timeout=30, interval=0.2, message="the built-in IngressClass skiff")  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=SHOP)
    got = json.loads(cluster.kubectl("get", "ing", "shop", "-o", "json").stdout)
    assert got["spec"]["ingressClassName"] == "skiff"
    table = rows(cluster, "ing")
    assert table[0] == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert table[1][:3] == ["shop", "skiff", "shop.example.com,api.example.com"]
    assert "80, 443" in cluster.kubectl("get", "ing", "shop").stdout
    # A class named explicitly is kept; one for another controller is not ours.
    other = SHOP.replace("name: shop}", "name: elsewhere}").replace(
        "spec:\n", "spec:\n  ingressClassName: nginx\n", 1
    )
    cluster.kubectl("apply", "-f", "-", input=other)
    assert rows(cluster, "ing", "elsewhere")[1][1] == "nginx"


def test_network_policy_defaults_and_columns(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=POLICY)
    got = json.loads(cluster.kubectl("get", "netpol", "db-from-web", "-o", "json").stdout)
    assert got["spec"]["policyTypes"] == ["Ingress"]
    assert got["spec"]["ingress"][0]["ports"] == [{"port": 5432, "protocol": "TCP"}]
    cluster.kubectl("apply", "-f", "-", input="""
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all}
spec:
  podSelector: {}
  egress: []
  policyTypes: [Ingress, Egress]
""")  # fmt: skip
    table = rows(cluster, "networkpolicies")
    assert table[0] == ["NAME", "POD-SELECTOR", "AGE"]
    assert {r[0]: r[1] for r in table[1:]} == {"db-from-web": "app=db", "deny-all": "<none>"}


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        (SHOP.replace("pathType: Exact", "pathType: Regex"), "spec.rules[1].http.paths[0].pathType"),
        (SHOP.replace("path: /cart", "path: cart"), "spec.rules[0].http.paths[0].path"),
        (POLICY.replace("- from: [{podSelector: {matchLabels: {app: web}}}]",
                        "- from: [{ipBlock: {cidr: 10.0.0.0/33}}]"),
         "spec.ingress[0].from[0].ipBlock.cidr"),
    ],
)  # fmt: skip
def test_bad_networking_objects_are_refused_naming_the_field(
    cluster: Cluster, manifest: str, field: str
) -> None:
    done = cluster.kubectl("apply", "-f", "-", input=manifest.replace("name: ", "name: bad-", 1),
                           check=False)  # fmt: skip
    assert done.returncode != 0 and field in done.stderr, done.stderr


def test_explain_reads_the_published_schema(cluster: Cluster) -> None:
    out = cluster.kubectl("explain", "ingress.spec.rules.http.paths").stdout
    assert "pathType" in out and "backend" in out
    assert "endPort" in cluster.kubectl("explain", "networkpolicy.spec.ingress.ports").stdout
