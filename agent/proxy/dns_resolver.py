"""Cluster DNS answers (the Kubernetes DNS specification), as a pure function.

`ClusterResolver.answer(query)` answers names in the cluster domain from a
`Lookup` (Services and EndpointSlices, normally the informer stores):

- `<svc>.<ns>.svc.<domain>` A -> the cluster IP; headless -> the ready
  endpoint IPs; ExternalName -> a CNAME to the external name;
- `<hostname>.<svc>.<ns>.svc.<domain>` A -> that endpoint of a headless
  Service (by its `hostname`, or its IP written with dashes);
- `_<port>._<proto>.<svc>.<ns>.svc.<domain>` SRV for named ports (one
  record per endpoint of a headless Service, with A records as additionals);
- `<a-b-c-d>.<ns>.pod.<domain>` A -> a.b.c.d;
- `<d>.<c>.<b>.<a>.in-addr.arpa` PTR of a cluster IP -> `<svc>.<ns>.svc.<domain>`
  (other reverse names are not ours: None);
- any other name in the domain -> NXDOMAIN; a name that exists but has no
  record of the asked type -> NOERROR with no answer (both with the SOA).

It returns None for names outside the cluster domain: the server decides
whether to forward them. Nothing here does I/O or mutates the objects.

`search(query, namespace)` is the server side of a pod's search list (what
CoreDNS's autopath does): a relative name with dots, asked as it stands, is
tried under `<ns>.svc.<domain>`, `svc.<domain>` and `<domain>`, and the first
that exists is answered with a CNAME to it (and its records). A pod's
resolv.conf (ndots:5) makes glibc try those suffixes itself, but busybox's
nslookup applies the search list only to names without a dot, so it sends
`<host>.<subdomain>` bare; without this the name left the cluster and failed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent.proxy import dns_wire as w
from agent.proxy.model import is_ipv4
from controlplane.client import endpointslices


class Lookup(Protocol):
    def service(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def endpoint_slices(self, namespace: str, name: str) -> Sequence[Mapping[str, Any]]:
        """The Service's EndpointSlices (kubernetes.io/service-name)."""
        ...

    def services_by_ip(self, ip: str) -> list[Mapping[str, Any]]:
        """Services whose cluster IP is `ip` (for reverse lookups)."""
        ...


@dataclass(frozen=True)
class _Target:
    hostname: str  # first label of the endpoint's own name
    ip: str


def _dashed(ip: str) -> str:
    return ip.replace(".", "-")


def _undashed(label: str) -> str | None:
    text = label.replace("-", ".")
    return text if is_ipv4(text) else None


class ClusterResolver:
    def __init__(self, lookup: Lookup, domain: str = "cluster.local", ttl: int = 5) -> None:
        self.lookup = lookup
        self.domain = domain.strip(".").lower()
        self.ttl = ttl

    def in_domain(self, name: str) -> bool:
        n = name.rstrip(".").lower()
        return n == self.domain or n.endswith("." + self.domain)

    # ---- helpers building the reply -----------------------------------------

    def reply(self, query: w.Message, rcode: int = w.NOERROR) -> w.Message:
        reply = w.Message(
            id=query.id,
            qr=True,
            opcode=query.opcode,
            aa=True,
            rd=query.rd,
            ra=True,
            rcode=rcode,
            questions=list(query.questions[:1]),
        )
        if query.edns() is not None:
            reply.additionals.append(w.opt_record())
        return reply

    def _soa(self) -> w.Record:
        rdata = w.soa_rdata(
            f"ns.dns.{self.domain}", f"hostmaster.{self.domain}", 1, 7200, 1800, 86400, self.ttl
        )
        return w.Record(self.domain, w.SOA, w.IN, self.ttl, rdata)

    def _negative(self, query: w.Message, rcode: int) -> w.Message:
        reply = self.reply(query, rcode)
        reply.authorities.append(self._soa())
        return reply

    def _rec(self, name: str, rtype: int, rdata: bytes) -> w.Record:
        return w.Record(name, rtype, w.IN, self.ttl, rdata)

    # ---- the answer ----------------------------------------------------------

    def search(self, query: w.Message, namespace: str, ndots: int = 5) -> w.Message | None:
        """The answer for a relative name (1 to ndots-1 dots, outside the
        domain) under the search list of a pod in `namespace`, as a CNAME to
        the first expansion that exists; None when none does."""
        if query.opcode != 0 or len(query.questions) != 1:
            return None
        q = query.questions[0]
        name = q.name.rstrip(".")
        if self.in_domain(name) or not 0 < name.count(".") < ndots:
            return None
        if q.qclass not in (w.IN, w.ANY) or q.qtype in (w.PTR, w.CNAME):
            return None
        for suffix in (f"{namespace}.svc.{self.domain}", f"svc.{self.domain}", self.domain):
            target = f"{name}.{suffix}"
            found = self._ask(query, target, q.qtype)
            if not found and (q.qtype == w.A or not self._ask(query, target, w.A)):
                continue  # no such name (or only an empty non-terminal)
            reply = self.reply(query)
            reply.answers = [self._rec(q.name, w.CNAME, w.name_rdata(target)), *found]
            return reply
        return None

    def answer(self, query: w.Message) -> w.Message | None:
        """The reply, or None when the name is not in the cluster domain."""
        if query.opcode != 0:
            return self.reply(query, w.NOTIMP)
        if len(query.questions) != 1:
            return self.reply(query, w.FORMERR)
        q = query.questions[0]
        if not self.in_domain(q.name):
            return self._reverse(query, q)
        if q.qclass not in (w.IN, w.ANY):
            return self.reply(query, w.REFUSED)
        name = q.name.rstrip(".").lower()
        rel = name[: -len(self.domain)].rstrip(".")
        labels = rel.split(".") if rel else []
        if not labels:
            if q.qtype in (w.SOA, w.ANY):
                reply = self.reply(query)
                reply.answers.append(self._soa())
                return reply
            return self._negative(query, w.NOERROR)
        if labels[-1] == "svc":
            return self._service_zone(query, q, labels[:-1])
        if labels[-1] == "pod" and len(labels) < 3:
            return self._negative(query, w.NOERROR)  # an empty non-terminal
        if labels[-1] == "pod" and len(labels) == 3:
            ip = _undashed(labels[0])
            if ip is None:
                return self._negative(query, w.NXDOMAIN)
            if q.qtype not in (w.A, w.ANY):
                return self._negative(query, w.NOERROR)
            reply = self.reply(query)
            reply.answers.append(self._rec(q.name, w.A, w.a_rdata(ip)))
            return reply
        return self._negative(query, w.NXDOMAIN)

    def _ask(self, query: w.Message, name: str, qtype: int) -> list[w.Record]:
        """The answer records this resolver has for `name` and `qtype`."""
        asked = w.Message(id=query.id, rd=query.rd, questions=[w.Question(name, qtype)])
        found = self.answer(asked)
        return found.answers if found is not None and found.rcode == w.NOERROR else []

    def _reverse(self, query: w.Message, q: w.Question) -> w.Message | None:
        name = q.name.rstrip(".").lower()
        if not name.endswith(".in-addr.arpa") or q.qtype not in (w.PTR, w.ANY):
            return None
        ip = ".".join(reversed(name[: -len(".in-addr.arpa")].split(".")))
        if not is_ipv4(ip):
            return None
        services = self.lookup.services_by_ip(ip)
        if not services:
            return None  # not a cluster IP: the upstream may know it
        reply = self.reply(query)
        for svc in sorted(
            services, key=lambda s: (s["metadata"]["namespace"], s["metadata"]["name"])
        ):
            meta = svc["metadata"]
            target = f"{meta['name']}.{meta['namespace']}.svc.{self.domain}"
            reply.answers.append(self._rec(q.name, w.PTR, w.name_rdata(target)))
        return reply

    def _service_zone(self, query: w.Message, q: w.Question, labels: list[str]) -> w.Message:
        if len(labels) <= 1:
            return self._negative(query, w.NOERROR)
        if len(labels) == 2:
            return self._service(query, q, labels[1], labels[0])
        if len(labels) == 3:
            return self._endpoint(query, q, labels[2], labels[1], labels[0])
        if len(labels) == 4 and labels[0].startswith("_") and labels[1].startswith("_"):
            return self._srv(query, q, labels[3], labels[2], labels[0][1:], labels[1][1:])
        return self._negative(query, w.NXDOMAIN)

    def _targets(self, ns: str, name: str) -> list[_Target]:
        """The ready addresses of the Service's slices, one per IP (as
        CoreDNS: `ready` unset counts as ready)."""
        seen: dict[str, _Target] = {}
        for e in endpointslices.endpoints(self.lookup.endpoint_slices(ns, name)):
            if e.ready and is_ipv4(e.ip) and e.ip not in seen:
                seen[e.ip] = _Target((e.hostname or _dashed(e.ip)).lower(), e.ip)
        return sorted(seen.values(), key=lambda t: ipaddress.IPv4Address(t.ip))

    def _service(self, query: w.Message, q: w.Question, ns: str, name: str) -> w.Message:
        svc = self.lookup.service(ns, name)
        if svc is None:
            return self._negative(query, w.NXDOMAIN)
        spec = svc.get("spec") or {}
        reply = self.reply(query)
        if spec.get("type") == "ExternalName":
            target = str(spec.get("externalName") or "").rstrip(".")
            if target:
                reply.answers.append(self._rec(q.name, w.CNAME, w.name_rdata(target)))
                return reply
            return self._negative(query, w.NOERROR)
        if q.qtype not in (w.A, w.ANY):
            return self._negative(query, w.NOERROR)
        ip = str(spec.get("clusterIP") or "")
        if ip == "None":
            for t in self._targets(ns, name):
                reply.answers.append(self._rec(q.name, w.A, w.a_rdata(t.ip)))
        elif is_ipv4(ip):
            reply.answers.append(self._rec(q.name, w.A, w.a_rdata(ip)))
        if not reply.answers:
            return self._negative(query, w.NOERROR)
        return reply

    def _endpoint(
        self, query: w.Message, q: w.Question, ns: str, name: str, host: str
    ) -> w.Message:
        svc = self.lookup.service(ns, name)
        if svc is None or (svc.get("spec") or {}).get("clusterIP") != "None":
            return self._negative(query, w.NXDOMAIN)
        matches = [t for t in self._targets(ns, name) if host in (t.hostname, _dashed(t.ip))]
        if not matches:
            return self._negative(query, w.NXDOMAIN)
        if q.qtype not in (w.A, w.ANY):
            return self._negative(query, w.NOERROR)
        reply = self.reply(query)
        for t in matches:
            reply.answers.append(self._rec(q.name, w.A, w.a_rdata(t.ip)))
        return reply

    def _srv(
        self, query: w.Message, q: w.Question, ns: str, name: str, port_name: str, proto: str
    ) -> w.Message:
        svc = self.lookup.service(ns, name)
        if svc is None:
            return self._negative(query, w.NXDOMAIN)
        spec = svc.get("spec") or {}
        proto = proto.upper()
        svc_name = f"{name}.{ns}.svc.{self.domain}"
        reply = self.reply(query)
        if spec.get("clusterIP") == "None":
            slices = self.lookup.endpoint_slices(ns, name)
            found: set[tuple[int, _Target]] = set()
            for e in endpointslices.endpoints(slices, port_name, proto):
                if e.ready and is_ipv4(e.ip):
                    found.add((e.port, _Target((e.hostname or _dashed(e.ip)).lower(), e.ip)))
            records = list(found)
            if not records:
                return self._negative(query, w.NXDOMAIN)
            weight = max(1, 100 // len(records))
            for number, t in sorted(records, key=lambda r: (r[1].ip, r[0])):
                target = f"{t.hostname}.{svc_name}"
                reply.answers.append(
                    self._rec(q.name, w.SRV, w.srv_rdata(0, weight, number, target))
                )
                reply.additionals.insert(0, self._rec(target, w.A, w.a_rdata(t.ip)))
        else:
            ip = str(spec.get("clusterIP") or "")
            ports = [
                p
                for p in spec.get("ports") or []
                if str(p.get("name") or "").lower() == port_name
                and str(p.get("protocol") or "TCP") == proto
            ]
            if not ports or not is_ipv4(ip):
                return self._negative(query, w.NXDOMAIN)
            for p in ports:
                reply.answers.append(
                    self._rec(q.name, w.SRV, w.srv_rdata(0, 100, int(p["port"]), svc_name))
                )
            reply.additionals.insert(0, self._rec(svc_name, w.A, w.a_rdata(ip)))
        if q.qtype not in (w.SRV, w.ANY):
            return self._negative(query, w.NOERROR)
        return reply
