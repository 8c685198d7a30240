"""KindInfo: the facts that name a kind and say where it is served.

Its Kind name, apiVersion (group/version spelled as Kubernetes spells it),
plural and singular (guessed from the Kind when not given), short names,
whether it is namespaced, which subresources (status, scale) it has, other
apiVersions accepted in manifests, and its discovery categories. Every kind's
definition (definition.py) carries one; CustomResourceDefinitions make them
at run time. Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KindInfo:
    kind: str
    api_version: str  # "v1", "apps/v1", "scheduling.volcano.sh/v1beta1"
    # "": guessed from the Kind as Kubernetes guesses it (meta.UnsafeGuessKindToResource:
    # the lower-case Kind; plural: "endpoints" stays, "es" after "s", "ies" for "y", else "s").
    plural: str = ""
    singular: str = ""
    short_names: tuple[str, ...] = ()
    namespaced: bool = True
    has_status: bool = True
    has_scale: bool = False
    # apiVersions also accepted in manifests (e.g. Event in v1 and events.k8s.io/v1).
    also_api_versions: tuple[str, ...] = ()
    # True when another group's kind has the same Kind name: the key is then
    # `Kind.group` and stored objects live under `plural.group`.
    qualified: bool = False
    # Discovery categories (`all`: listed by `kubectl get all`).
    categories: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        singular = self.singular or self.kind.lower()
        object.__setattr__(self, "singular", singular)
        if not self.plural and singular:
            if singular.endswith("endpoints"):
                plural = singular
            elif singular.endswith("s"):
                plural = f"{singular}es"
            elif singular.endswith("y"):
                plural = f"{singular[:-1]}ies"
            else:
                plural = f"{singular}s"
            object.__setattr__(self, "plural", plural)

    @property
    def key(self) -> str:
        """The name the registry, the gRPC API and clients use for this kind."""
        return f"{self.kind}.{self.group}" if self.qualified else self.kind

    @property
    def storage_name(self) -> str:
        """The first segment of this kind's storage keys."""
        return f"{self.plural}.{self.group}" if self.qualified else self.plural

    # Never stored: a create is answered at once (SubjectAccessReview, TokenReview).
    create_only: bool = False
    # Never stored: computed on each read, get and list only (ComponentStatus).
    read_only: bool = False

    @property
    def group(self) -> str:
        """The API group ("" for the core group)."""
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def resource(self) -> str:
        """`plural` or `plural.group`, as kubectl prints resource types."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def accepts_api_version(self, api_version: str) -> bool:
        return api_version == self.api_version or api_version in self.also_api_versions
