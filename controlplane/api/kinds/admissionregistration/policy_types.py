"""The schema of ValidatingAdmissionPolicy and its Binding
(k8s.io/api/admissionregistration/v1 types.go): `kubectl explain`, the
OpenAPI documents, and pruning of fields Kubernetes does not have.
Label selectors and matchConditions are `object`s here, as in the webhook
configurations' schema."""

from __future__ import annotations

from controlplane.api.kinds.admissionregistration.webhooks import PACKAGE
from controlplane.api.schema import Type, declare, kind

GVK = ("admissionregistration.k8s.io", "v1")

MATCH_TYPES: dict[str, Type] = {
    **declare(
        PACKAGE,
        """
        MatchResources: MatchResources decides whether to run the admission control policy on an
                        object based on whether it meets the match criteria.
            namespaceSelector     object                     Which namespaces' objects are judged (a
                                                             label selector).
            objectSelector        object                     Which objects are judged (a label
                                                             selector).
            resourceRules         []NamedRuleWithOperations  The operations and resources matched.
            excludeResourceRules  []NamedRuleWithOperations  What is never matched.
            matchPolicy           string                     Exact or Equivalent (default).
        NamedRuleWithOperations: NamedRuleWithOperations is a tuple of Operations and Resources with
                                 ResourceNames.
            resourceNames  []string  The names the rule applies to; empty is all.
            operations     []string  CREATE, UPDATE, DELETE, CONNECT or *.
            apiGroups      []string  API groups; * is all.
            apiVersions    []string  API versions; * is all.
            resources      []string  Resources (and subresources); * is all.
            scope          string    Cluster, Namespaced or * (default).
        """,
    ),
}

POLICY_TYPES: dict[str, Type] = {
    "ValidatingAdmissionPolicy": kind(
        PACKAGE,
        "ValidatingAdmissionPolicy describes the definition of an admission validation policy "
        "that accepts or rejects an object without changing it.",
        (*GVK, "ValidatingAdmissionPolicy"),
        spec=("ValidatingAdmissionPolicySpec", "Specification of the desired behavior."),
        status=("ValidatingAdmissionPolicyStatus", "The status of the policy."),
    ),
    **declare(
        PACKAGE,
        """
        ValidatingAdmissionPolicySpec: ValidatingAdmissionPolicySpec is the specification of the
                                       desired behavior of the AdmissionPolicy.
            paramKind         ParamKind          The kind of the resources used to parameterize this
                                                 policy.
            matchConstraints  MatchResources     The resources this policy is designed to validate.
            validations       []Validation       CEL expressions used to validate the request.
            failurePolicy     string             Ignore or Fail (default): what an evaluation error
                                                 does.
            auditAnnotations  []AuditAnnotation  CEL expressions that make audit annotations.
            matchConditions   []object           CEL conditions a request must meet to be validated.
            variables         []Variable         Named CEL expressions the other expressions can
                                                 use.
        ParamKind: ParamKind is a tuple of Group Kind and Version.
            apiVersion  string  The API group version the resources belong to.
            kind        string  The API kind the resources belong to.
        Validation: Validation specifies the CEL expression which is used to apply the validation.
            expression!        string  The CEL expression; false fails the validation.
            message            string  The message shown when the validation fails.
            reason             string  Unauthorized, Forbidden (default), Invalid or
                                       RequestEntityTooLarge.
            messageExpression  string  A CEL expression whose string is the failure message.
        Variable: Variable is the definition of a variable that is used for composition.
            name!        string  The name, used as variables.<name>.
            expression!  string  The CEL expression of its value.
        AuditAnnotation: AuditAnnotation describes how to produce an audit annotation for an API
                         request.
            key!              string  The annotation key, recorded as <policy name>/<key>.
            valueExpression!  string  A CEL expression whose string (or null) is the value.
        ValidatingAdmissionPolicyStatus: ValidatingAdmissionPolicyStatus represents the status of an
                                         admission validation policy.
            observedGeneration  integer       The generation the controller observed.
            typeChecking        TypeChecking  The results of type checking each expression.
            conditions          []object      The conditions of the policy.
        TypeChecking: TypeChecking contains results of type checking the expressions in the policy.
            expressionWarnings  []ExpressionWarning  The type checking warnings per expression.
        ExpressionWarning: ExpressionWarning is a warning information that targets a specific
                           expression.
            fieldRef!  string  The path to the field that refers to the expression.
            warning!   string  The content of the type checking information.
        """,
    ),
}

BINDING_TYPES: dict[str, Type] = {
    "ValidatingAdmissionPolicyBinding": kind(
        PACKAGE,
        "ValidatingAdmissionPolicyBinding binds the ValidatingAdmissionPolicy with "
        "parametrized resources.",
        (*GVK, "ValidatingAdmissionPolicyBinding"),
        spec=("ValidatingAdmissionPolicyBindingSpec", "Specification of the desired behavior."),
    ),
    **declare(
        PACKAGE,
        """
        ValidatingAdmissionPolicyBindingSpec: ValidatingAdmissionPolicyBindingSpec is the
                                              specification of the ValidatingAdmissionPolicyBinding.
            policyName         string          The name of the ValidatingAdmissionPolicy bound.
            paramRef           ParamRef        The resource used to configure the policy.
            matchResources     MatchResources  Which resources the policy is applied to.
            validationActions  []string        Deny, Warn and/or Audit: what a failure does.
        ParamRef: ParamRef describes how to locate the params to be used as input to expressions.
            name                     string  The name of the resource being referenced.
            namespace                string  The namespace of the referenced resource.
            selector                 object  Params by label selector (instead of name).
            parameterNotFoundAction  string  Allow or Deny when no params are found.
        """,
    ),
}
