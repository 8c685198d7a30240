"""What the two webhook configuration kinds share: the `webhooks[]` entries'
defaults, validation and schema, as Kubernetes' admissionregistration/v1
(pkg/apis/admissionregistration/validation) has them.

- Defaults: failurePolicy Fail, matchPolicy Equivalent, timeoutSeconds 10,
  namespaceSelector and objectSelector {}, a rule's scope "*", a service
  reference's port 443; for mutating webhooks reinvocationPolicy Never.
- Validation, each problem naming the field: a webhook name fully qualified
  (a DNS subdomain of at least three segments) and unique; clientConfig
  with exactly one of url (https) and service; sideEffects None or
  NoneOnDryRun; admissionReviewVersions non-empty, including v1 or v1beta1;
  the enumerations; timeoutSeconds 1..30; rules' operations.
- Columns: NAME WEBHOOKS AGE.
- definition(mutating): the KindDef each kind's module serves.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any
from urllib.parse import urlsplit

from controlplane.api.checks import Errors, each_object, enum, integer, items, mapping, selector
from controlplane.api.display import age, name
from controlplane.api.dnsnames import is_dns_label, is_dns_subdomain
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts, merge
from controlplane.api.schema import Type, declare, kind, struct

Object = dict[str, Any]
PACKAGE = "io.k8s.api.admissionregistration.v1"
OPERATIONS = ("*", "CREATE", "UPDATE", "DELETE", "CONNECT")
CEL_ENGINE = "controlplane.api.cel.match_conditions"
MAX_MATCH_CONDITIONS = 64


def defaults(obj: Object, mutating: bool) -> None:
    for hook in obj.get("webhooks") or []:
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("timeoutSeconds", 10)
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        if mutating:
            hook.setdefault("reinvocationPolicy", "Never")
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
        service = (hook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)


def _client_config(e: Errors, path: str, cfg: Any) -> None:
    if not mapping(e, path, cfg, required=True):
        return
    url, service = cfg.get("url"), cfg.get("service")
    if (url is None) == (service is None):
        e.required(path, "exactly one of url or service is required")
        return
    if url is not None:
        parts = urlsplit(str(url))
        if parts.scheme != "https" or not parts.hostname:
            e.invalid(f"{path}.url", url, "'https' is the only allowed URL scheme")
        elif parts.fragment or parts.query or parts.username:
            e.invalid(f"{path}.url", url, "fragments, query parameters and user information "
                      "are not permitted")  # fmt: skip
        return
    spath = f"{path}.service"
    if not mapping(e, spath, service):
        return
    for key in ("namespace", "name"):
        value = service.get(key)
        if not value:
            e.required(f"{spath}.{key}", "service " + key + " is required")
        elif not is_dns_label(str(value)):
            e.invalid(f"{spath}.{key}", value, "a lowercase RFC 1123 label is required")
    integer(e, f"{spath}.port", service.get("port"), 1, 65535)
    p = service.get("path")
    if p is not None and not str(p).startswith("/"):
        e.invalid(f"{spath}.path", p, "must start with a '/'")


def _rules(e: Errors, path: str, rules: Any) -> None:
    if not items(e, path, rules):
        return
    for rp, rule in each_object(e, path, rules):
        for key in ("operations", "apiGroups", "apiVersions", "resources"):
            if not items(e, f"{rp}.{key}", rule.get(key), required=True):
                continue
        for j, op in enumerate(rule.get("operations") or []):
            enum(e, f"{rp}.operations[{j}]", op, OPERATIONS)
        enum(e, f"{rp}.scope", rule.get("scope"), ("*", "Cluster", "Namespaced"))


def cel_available() -> bool:
    """Whether the CEL engine matchConditions need is in this build (the "cel"
    part's controlplane.api.cel.match_conditions)."""
    try:
        return importlib.util.find_spec(CEL_ENGINE) is not None
    except ModuleNotFoundError:
        return False


def _match_conditions(e: Errors, path: str, conditions: Any) -> None:
    if conditions is None:
        return
    if cel_available():  # the engine's own checks: names, and each expression compiled
        engine = importlib.import_module(CEL_ENGINE)
        e.items.extend(engine.compile_errors(conditions, path))
        return
    if not items(e, path, conditions):
        return
    if len(conditions) > MAX_MATCH_CONDITIONS:
        e.add(path, f"Too many: {len(conditions)}: must have at most {MAX_MATCH_CONDITIONS} items")
    seen: set[str] = set()
    for cp, cond in each_object(e, path, conditions):
        cname, expression = cond.get("name"), cond.get("expression")
        if not cname:
            e.required(f"{cp}.name")
        elif cname in seen:
            e.duplicate(f"{cp}.name", cname)
        else:
            seen.add(str(cname))
        if not expression:
            e.required(f"{cp}.expression")
    if conditions and not cel_available():
        e.forbidden(path, "matchConditions need a CEL engine, which this API server "
                    "does not have yet")  # fmt: skip


def validate(e: Errors, obj: Object, mutating: bool) -> None:
    hooks = obj.get("webhooks")
    if hooks is None:
        return
    if not isinstance(hooks, list):
        e.invalid("webhooks", hooks, "must be a list")
        return
    seen: set[str] = set()
    for path, hook in each_object(e, "webhooks", hooks):
        hook_name = hook.get("name")
        if not hook_name:
            e.required(f"{path}.name")
        elif not is_dns_subdomain(str(hook_name)) or str(hook_name).count(".") < 2:
            e.invalid(f"{path}.name", hook_name, "should be a domain with at least three "
                      "segments separated by dots")  # fmt: skip
        elif hook_name in seen:
            e.duplicate(f"{path}.name", hook_name)
        else:
            seen.add(str(hook_name))
        _client_config(e, f"{path}.clientConfig", hook.get("clientConfig"))
        _rules(e, f"{path}.rules", hook.get("rules"))
        side = hook.get("sideEffects")
        if side is None:
            e.not_supported(f"{path}.sideEffects", side, ("None", "NoneOnDryRun"))
        else:
            enum(e, f"{path}.sideEffects", side, ("None", "NoneOnDryRun"))
        versions = hook.get("admissionReviewVersions")
        if not versions:
            e.required(f"{path}.admissionReviewVersions",
                       "must specify one of v1, v1beta1")  # fmt: skip
        elif not isinstance(versions, list) or not {"v1", "v1beta1"} & set(map(str, versions)):
            e.invalid(f"{path}.admissionReviewVersions", versions,
                      "must include at least one of v1, v1beta1")  # fmt: skip
        enum(e, f"{path}.failurePolicy", hook.get("failurePolicy"), ("Ignore", "Fail"))
        enum(e, f"{path}.matchPolicy", hook.get("matchPolicy"), ("Exact", "Equivalent"))
        integer(e, f"{path}.timeoutSeconds", hook.get("timeoutSeconds"), 1, 30)
        for sel in ("namespaceSelector", "objectSelector"):
            if hook.get(sel) is not None:
                selector(e, f"{path}.{sel}", hook[sel], required=False)
        _match_conditions(e, f"{path}.matchConditions", hook.get("matchConditions"))
        if mutating:
            enum(e, f"{path}.reinvocationPolicy", hook.get("reinvocationPolicy"),
                 ("Never", "IfNeeded"))  # fmt: skip


def row(obj: Object, now: float, wide: bool) -> list[str]:
    return [name(obj), str(len(obj.get("webhooks") or [])), age(obj, now)]


PRINTER = Printer(columns(("NAME", "WEBHOOKS", "AGE")), row)


def webhook_type(mutating: bool) -> Type:
    extra = {"reinvocationPolicy": ("string", "Never (default) or IfNeeded.")} if mutating else {}
    return struct(
        PACKAGE,
        ("MutatingWebhook" if mutating else "ValidatingWebhook")
        + " describes an admission webhook and the resources and operations it applies to.",
        ("name", "clientConfig", "sideEffects", "admissionReviewVersions"),
        name=("string", "The fully qualified name of the admission webhook."),
        clientConfig=("WebhookClientConfig", "How to reach the webhook."),
        rules=("[]RuleWithOperations", "The operations and resources the webhook cares about."),
        failurePolicy=("string", "Ignore or Fail (default)."),
        matchPolicy=("string", "Exact or Equivalent (default)."),
        namespaceSelector=("object", "Which namespaces' objects are sent (a label selector)."),
        objectSelector=("object", "Which objects are sent (a label selector)."),
        sideEffects=("string", "None or NoneOnDryRun."),
        timeoutSeconds=("integer", "Seconds before a call fails, 1 to 30 (default 10)."),
        admissionReviewVersions=("[]string", "AdmissionReview versions the webhook takes."),
        matchConditions=("[]object", "CEL conditions a request must meet to be sent."),
        **extra,
    )


SHARED_TYPES: dict[str, Type] = {
    **declare(
        PACKAGE,
        """
        WebhookClientConfig: WebhookClientConfig says how to talk to a webhook: a URL or a Service.
            url       string            The webhook's https URL.
            service   ServiceReference  The Service in front of the webhook.
            caBundle  string            PEM CA bundle (base64) to verify the webhook's certificate.
        ServiceReference: ServiceReference names a Service.
            namespace!  string   The Service's namespace.
            name!       string   The Service's name.
            path        string   The URL path of requests to it.
            port        integer  The Service's port (default 443).
        RuleWithOperations: RuleWithOperations is the operations and resources a webhook is sent.
            operations   []string  CREATE, UPDATE, DELETE, CONNECT or *.
            apiGroups    []string  API groups; * is all.
            apiVersions  []string  API versions; * is all.
            resources    []string  Resources (and subresources); * is all.
            scope        string    Cluster, Namespaced or * (default).
        """,
    ),
}


def definition(mutating: bool) -> KindDef:
    """The Mutating or Validating WebhookConfiguration kind (the shared
    types are served with the validating one)."""
    kind_name = ("Mutating" if mutating else "Validating") + "WebhookConfiguration"
    hook = "MutatingWebhook" if mutating else "ValidatingWebhook"

    def kind_defaults(obj: Object) -> None:
        defaults(obj, mutating)

    def kind_validate(e: Errors, obj: Object, old: Object | None) -> None:
        validate(e, obj, mutating)

    return KindDef(
        KindInfo(
            kind_name,
            "admissionregistration.k8s.io/v1",
            kind_name.lower() + "s",
            kind_name.lower(),
            (),
            namespaced=False,
            has_status=False,
        ),
        types={
            kind_name: kind(
                PACKAGE,
                f"{kind_name} describes the configuration of an admission webhook.",
                ("admissionregistration.k8s.io", "v1", kind_name),
                webhooks=(f"[]{hook}", "The webhooks and the resources they apply to."),
            ),
            hook: webhook_type(mutating),
            **({} if mutating else SHARED_TYPES),
        },
        defaults=kind_defaults,
        validate=kind_validate,
        printer=PRINTER,
        patch_meta=facts(extra={"webhooks": merge("name")}),  # Kubernetes: merge on name
    )
