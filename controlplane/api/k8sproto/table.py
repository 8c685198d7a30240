"""Kubernetes' protobuf messages, as facts: every message of the API groups
skiff serves (and those it will), its fields' numbers, JSON names and types.

Derived from k8s.io/api's and k8s.io/apimachinery's generated.proto (field
numbers and types) and their types.go (JSON names, and which fields are Go
pointers, whose zero value is a value rather than "unset"). One line per
message: `package.Message [!array] field field ...`; a field is
`number,jsonName,type[,flag]` where type is a scalar (s string, b bool,
y bytes, i32, i64), a message (`Name` in the same package, else
`package.Name`), `[]T` repeated or `{T}` map<string, T>; flag `p` marks a
field whose zero value is a value (a Go pointer, or a field Go's JSON
writes even when zero: kept when decoded), `i` a struct Go embeds inline
(a Volume's VolumeSource, a Probe's handler: its fields are the parent's
in JSON). `!array` marks a
message that JSON writes as a bare array of its one repeated field
(ExtraValue, Verbs). schema.py compiles this table for the codec;
controlplane/api/openapi_model.py reads it for the OpenAPI documents' nested
types.
"""

TABLE = """
admissionregistration/v1.MatchCondition 1,name,s,p 2,expression,s,p
admissionregistration/v1.MutatingWebhook 1,name,s,p 2,clientConfig,WebhookClientConfig 3,rules,[]RuleWithOperations 4,failurePolicy,s,p 9,matchPolicy,s,p 5,namespaceSelector,meta/v1.LabelSelector,p 11,objectSelector,meta/v1.LabelSelector,p 6,sideEffects,s,p 7,timeoutSeconds,i32,p 8,admissionReviewVersions,[]s 10,reinvocationPolicy,s,p 12,matchConditions,[]MatchCondition
admissionregistration/v1.MutatingWebhookConfiguration 1,metadata,meta/v1.ObjectMeta 2,webhooks,[]MutatingWebhook
admissionregistration/v1.MutatingWebhookConfigurationList 1,metadata,meta/v1.ListMeta 2,items,[]MutatingWebhookConfiguration
admissionregistration/v1.Rule 1,apiGroups,[]s 2,apiVersions,[]s 3,resources,[]s 4,scope,s,p
admissionregistration/v1.RuleWithOperations 1,operations,[]s 2,,Rule,i
admissionregistration/v1.ServiceReference 1,namespace,s,p 2,name,s,p 3,path,s,p 4,port,i32,p
admissionregistration/v1.ValidatingWebhook 1,name,s,p 2,clientConfig,WebhookClientConfig 3,rules,[]RuleWithOperations 4,failurePolicy,s,p 9,matchPolicy,s,p 5,namespaceSelector,meta/v1.LabelSelector,p 10,objectSelector,meta/v1.LabelSelector,p 6,sideEffects,s,p 7,timeoutSeconds,i32,p 8,admissionReviewVersions,[]s 11,matchConditions,[]MatchCondition
admissionregistration/v1.ValidatingWebhookConfiguration 1,metadata,meta/v1.ObjectMeta 2,webhooks,[]ValidatingWebhook
admissionregistration/v1.ValidatingWebhookConfigurationList 1,metadata,meta/v1.ListMeta 2,items,[]ValidatingWebhookConfiguration
admissionregistration/v1.AuditAnnotation 1,key,s,p 2,valueExpression,s,p
admissionregistration/v1.ExpressionWarning 2,fieldRef,s,p 3,warning,s,p
admissionregistration/v1.MatchResources 1,namespaceSelector,meta/v1.LabelSelector,p 2,objectSelector,meta/v1.LabelSelector,p 3,resourceRules,[]NamedRuleWithOperations 4,excludeResourceRules,[]NamedRuleWithOperations 7,matchPolicy,s,p
admissionregistration/v1.NamedRuleWithOperations 1,resourceNames,[]s 2,,RuleWithOperations,i
admissionregistration/v1.ParamKind 1,apiVersion,s 2,kind,s
admissionregistration/v1.ParamRef 1,name,s 2,namespace,s 3,selector,meta/v1.LabelSelector,p 4,parameterNotFoundAction,s,p
admissionregistration/v1.TypeChecking 1,expressionWarnings,[]ExpressionWarning
admissionregistration/v1.ValidatingAdmissionPolicy 1,metadata,meta/v1.ObjectMeta 2,spec,ValidatingAdmissionPolicySpec 3,status,ValidatingAdmissionPolicyStatus
admissionregistration/v1.ValidatingAdmissionPolicyBinding 1,metadata,meta/v1.ObjectMeta 2,spec,ValidatingAdmissionPolicyBindingSpec
admissionregistration/v1.ValidatingAdmissionPolicyBindingList 1,metadata,meta/v1.ListMeta 2,items,[]ValidatingAdmissionPolicyBinding
admissionregistration/v1.ValidatingAdmissionPolicyBindingSpec 1,policyName,s 2,paramRef,ParamRef,p 3,matchResources,MatchResources,p 4,validationActions,[]s
admissionregistration/v1.ValidatingAdmissionPolicyList 1,metadata,meta/v1.ListMeta 2,items,[]ValidatingAdmissionPolicy
admissionregistration/v1.ValidatingAdmissionPolicySpec 1,paramKind,ParamKind,p 2,matchConstraints,MatchResources,p 3,validations,[]Validation 4,failurePolicy,s,p 5,auditAnnotations,[]AuditAnnotation 6,matchConditions,[]MatchCondition 7,variables,[]Variable
admissionregistration/v1.ValidatingAdmissionPolicyStatus 1,observedGeneration,i64 2,typeChecking,TypeChecking,p 3,conditions,[]meta/v1.Condition
admissionregistration/v1.Validation 1,expression,s,p 2,message,s 3,reason,s,p 4,messageExpression,s
admissionregistration/v1.Variable 1,name,s,p 2,expression,s,p
admissionregistration/v1.WebhookClientConfig 3,url,s,p 1,service,ServiceReference,p 2,caBundle,y
apiregistration/v1.APIService 1,metadata,meta/v1.ObjectMeta 2,spec,APIServiceSpec 3,status,APIServiceStatus
apiregistration/v1.APIServiceCondition 1,type,s,p 2,status,s,p 3,lastTransitionTime,meta/v1.Time 4,reason,s 5,message,s
apiregistration/v1.APIServiceList 1,metadata,meta/v1.ListMeta 2,items,[]APIService
apiregistration/v1.APIServiceSpec 1,service,ServiceReference,p 2,group,s 3,version,s 4,insecureSkipTLSVerify,b 5,caBundle,y 7,groupPriorityMinimum,i32,p 8,versionPriority,i32,p
apiregistration/v1.APIServiceStatus 1,conditions,[]APIServiceCondition
apiregistration/v1.ServiceReference 1,namespace,s 2,name,s 3,port,i32,p
core/v1.AWSElasticBlockStoreVolumeSource 1,volumeID,s,p 2,fsType,s 3,partition,i32 4,readOnly,b
core/v1.Affinity 1,nodeAffinity,NodeAffinity,p 2,podAffinity,PodAffinity,p 3,podAntiAffinity,PodAntiAffinity,p
core/v1.AppArmorProfile 1,type,s,p 2,localhostProfile,s,p
core/v1.AttachedVolume 1,name,s,p 2,devicePath,s,p
core/v1.AvoidPods 1,preferAvoidPods,[]PreferAvoidPodsEntry
core/v1.AzureDiskVolumeSource 1,diskName,s,p 2,diskURI,s,p 3,cachingMode,s,p 4,fsType,s,p 5,readOnly,b,p 6,kind,s,p
core/v1.AzureFilePersistentVolumeSource 1,secretName,s,p 2,shareName,s,p 3,readOnly,b 4,secretNamespace,s,p
core/v1.AzureFileVolumeSource 1,secretName,s,p 2,shareName,s,p 3,readOnly,b
core/v1.Binding 1,metadata,meta/v1.ObjectMeta 2,target,ObjectReference
core/v1.CSIPersistentVolumeSource 1,driver,s,p 2,volumeHandle,s,p 3,readOnly,b 4,fsType,s 5,volumeAttributes,{s} 6,controllerPublishSecretRef,SecretReference,p 7,nodeStageSecretRef,SecretReference,p 8,nodePublishSecretRef,SecretReference,p 9,controllerExpandSecretRef,SecretReference,p 10,nodeExpandSecretRef,SecretReference,p
core/v1.CSIVolumeSource 1,driver,s,p 2,readOnly,b,p 3,fsType,s,p 4,volumeAttributes,{s} 5,nodePublishSecretRef,LocalObjectReference,p
core/v1.Capabilities 1,add,[]s 2,drop,[]s
core/v1.CephFSPersistentVolumeSource 1,monitors,[]s,p 2,path,s 3,user,s 4,secretFile,s 5,secretRef,SecretReference,p 6,readOnly,b
core/v1.CephFSVolumeSource 1,monitors,[]s,p 2,path,s 3,user,s 4,secretFile,s 5,secretRef,LocalObjectReference,p 6,readOnly,b
core/v1.CinderPersistentVolumeSource 1,volumeID,s,p 2,fsType,s 3,readOnly,b 4,secretRef,SecretReference,p
core/v1.CinderVolumeSource 1,volumeID,s,p 2,fsType,s 3,readOnly,b 4,secretRef,LocalObjectReference,p
core/v1.ClientIPConfig 1,timeoutSeconds,i32,p
core/v1.ClusterTrustBundleProjection 1,name,s,p 2,signerName,s,p 3,labelSelector,meta/v1.LabelSelector,p 5,optional,b,p 4,path,s,p 6,user,i64,p
core/v1.ComponentCondition 1,type,s,p 2,status,s,p 3,message,s 4,error,s
core/v1.ComponentStatus 1,metadata,meta/v1.ObjectMeta 2,conditions,[]ComponentCondition
core/v1.ComponentStatusList 1,metadata,meta/v1.ListMeta 2,items,[]ComponentStatus
core/v1.ConfigMap 1,metadata,meta/v1.ObjectMeta 4,immutable,b,p 2,data,{s} 3,binaryData,{y}
core/v1.ConfigMapEnvSource 1,,LocalObjectReference,i 2,optional,b,p
core/v1.ConfigMapKeySelector 1,,LocalObjectReference,i 2,key,s,p 3,optional,b,p
core/v1.ConfigMapList 1,metadata,meta/v1.ListMeta 2,items,[]ConfigMap
core/v1.ConfigMapNodeConfigSource 1,namespace,s,p 2,name,s,p 3,uid,s 4,resourceVersion,s 5,kubeletConfigKey,s,p
core/v1.ConfigMapProjection 1,,LocalObjectReference,i 2,items,[]KeyToPath 4,optional,b,p
core/v1.ConfigMapVolumeSource 1,,LocalObjectReference,i 2,items,[]KeyToPath 3,defaultMode,i32,p 4,optional,b,p 5,defaultUser,i64,p
core/v1.Container 1,name,s,p 2,image,s 3,command,[]s 4,args,[]s 5,workingDir,s 6,ports,[]ContainerPort 19,envFrom,[]EnvFromSource 7,env,[]EnvVar 8,resources,ResourceRequirements 23,resizePolicy,[]ContainerResizePolicy 24,restartPolicy,s,p 25,restartPolicyRules,[]ContainerRestartRule 9,volumeMounts,[]VolumeMount 21,volumeDevices,[]VolumeDevice 10,livenessProbe,Probe,p 11,readinessProbe,Probe,p 22,startupProbe,Probe,p 12,lifecycle,Lifecycle,p 13,terminationMessagePath,s 20,terminationMessagePolicy,s 14,imagePullPolicy,s 15,securityContext,SecurityContext,p 16,stdin,b 17,stdinOnce,b 18,tty,b
core/v1.ContainerExtendedResourceRequest 1,containerName,s,p 2,resourceName,s,p 3,requestName,s,p
core/v1.ContainerImage 1,names,[]s,p 2,sizeBytes,i64
core/v1.ContainerPort 1,name,s 2,hostPort,i32 3,containerPort,i32,p 4,protocol,s 5,hostIP,s
core/v1.ContainerResizePolicy 1,resourceName,s,p 2,restartPolicy,s,p
core/v1.ContainerRestartRule 1,action,s 2,exitCodes,ContainerRestartRuleOnExitCodes,p
core/v1.ContainerRestartRuleOnExitCodes 1,operator,s 2,values,[]i32
core/v1.ContainerState 1,waiting,ContainerStateWaiting,p 2,running,ContainerStateRunning,p 3,terminated,ContainerStateTerminated,p
core/v1.ContainerStateRunning 1,startedAt,meta/v1.Time
core/v1.ContainerStateTerminated 1,exitCode,i32,p 2,signal,i32 3,reason,s 4,message,s 5,startedAt,meta/v1.Time 6,finishedAt,meta/v1.Time 7,containerID,s
core/v1.ContainerStateWaiting 1,reason,s 2,message,s
core/v1.ContainerStatus 1,name,s,p 2,state,ContainerState 3,lastState,ContainerState 4,ready,b,p 5,restartCount,i32,p 6,image,s,p 7,imageID,s,p 8,containerID,s 9,started,b,p 10,allocatedResources,{resource.Quantity} 11,resources,ResourceRequirements,p 12,volumeMounts,[]VolumeMountStatus 13,user,ContainerUser,p 14,allocatedResourcesStatus,[]ResourceStatus 15,stopSignal,s,p
core/v1.ContainerUser 1,linux,LinuxContainerUser,p
core/v1.DaemonEndpoint 1,Port,i32,p
core/v1.DownwardAPIProjection 1,items,[]DownwardAPIVolumeFile
core/v1.DownwardAPIVolumeFile 1,path,s,p 2,fieldRef,ObjectFieldSelector,p 3,resourceFieldRef,ResourceFieldSelector,p 4,mode,i32,p 5,user,i64,p
core/v1.DownwardAPIVolumeSource 1,items,[]DownwardAPIVolumeFile 2,defaultMode,i32,p 3,defaultUser,i64,p
core/v1.EmptyDirVolumeSource 1,medium,s 2,sizeLimit,resource.Quantity,p 3,mode,i32,p
core/v1.EndpointAddress 1,ip,s,p 3,hostname,s 4,nodeName,s,p 2,targetRef,ObjectReference,p
core/v1.EndpointPort 1,name,s 2,port,i32,p 3,protocol,s 4,appProtocol,s,p
core/v1.EndpointSubset 1,addresses,[]EndpointAddress 2,notReadyAddresses,[]EndpointAddress 3,ports,[]EndpointPort
core/v1.Endpoints 1,metadata,meta/v1.ObjectMeta 2,subsets,[]EndpointSubset
core/v1.EndpointsList 1,metadata,meta/v1.ListMeta 2,items,[]Endpoints
core/v1.EnvFromSource 1,prefix,s 2,configMapRef,ConfigMapEnvSource,p 3,secretRef,SecretEnvSource,p
core/v1.EnvVar 1,name,s,p 2,value,s 3,valueFrom,EnvVarSource,p
core/v1.EnvVarSource 1,fieldRef,ObjectFieldSelector,p 2,resourceFieldRef,ResourceFieldSelector,p 3,configMapKeyRef,ConfigMapKeySelector,p 4,secretKeyRef,SecretKeySelector,p 5,fileKeyRef,FileKeySelector,p
core/v1.EphemeralContainer 1,,EphemeralContainerCommon,i 2,targetContainerName,s
core/v1.EphemeralContainerCommon 1,name,s,p 2,image,s 3,command,[]s 4,args,[]s 5,workingDir,s 6,ports,[]ContainerPort 19,envFrom,[]EnvFromSource 7,env,[]EnvVar 8,resources,ResourceRequirements 23,resizePolicy,[]ContainerResizePolicy 24,restartPolicy,s,p 25,restartPolicyRules,[]ContainerRestartRule 9,volumeMounts,[]VolumeMount 21,volumeDevices,[]VolumeDevice 10,livenessProbe,Probe,p 11,readinessProbe,Probe,p 22,startupProbe,Probe,p 12,lifecycle,Lifecycle,p 13,terminationMessagePath,s 20,terminationMessagePolicy,s 14,imagePullPolicy,s 15,securityContext,SecurityContext,p 16,stdin,b 17,stdinOnce,b 18,tty,b
core/v1.EphemeralVolumeSource 1,volumeClaimTemplate,PersistentVolumeClaimTemplate,p
core/v1.Event 1,metadata,meta/v1.ObjectMeta 2,involvedObject,ObjectReference 3,reason,s 4,message,s 5,source,EventSource 6,firstTimestamp,meta/v1.Time 7,lastTimestamp,meta/v1.Time 8,count,i32 9,type,s 10,eventTime,meta/v1.MicroTime 11,series,EventSeries,p 12,action,s 13,related,ObjectReference,p 14,reportingComponent,s,p 15,reportingInstance,s,p
core/v1.EventList 1,metadata,meta/v1.ListMeta 2,items,[]Event
core/v1.EventSeries 1,count,i32 2,lastObservedTime,meta/v1.MicroTime
core/v1.EventSource 1,component,s 2,host,s
core/v1.EvictionResponder 1,name,s,p 2,priority,i32,p
core/v1.ExecAction 1,command,[]s
core/v1.FCVolumeSource 1,targetWWNs,[]s 2,lun,i32,p 3,fsType,s 4,readOnly,b 5,wwids,[]s
core/v1.FileKeySelector 1,volumeName,s,p 2,path,s,p 3,key,s,p 4,optional,b,p
core/v1.FlexPersistentVolumeSource 1,driver,s,p 2,fsType,s 3,secretRef,SecretReference,p 4,readOnly,b 5,options,{s}
core/v1.FlexVolumeSource 1,driver,s,p 2,fsType,s 3,secretRef,LocalObjectReference,p 4,readOnly,b 5,options,{s}
core/v1.FlockerVolumeSource 1,datasetName,s 2,datasetUUID,s
core/v1.GCEPersistentDiskVolumeSource 1,pdName,s,p 2,fsType,s 3,partition,i32 4,readOnly,b
core/v1.GRPCAction 1,port,i32,p 2,service,s,p 3,mode,s,p
core/v1.GitRepoVolumeSource 1,repository,s,p 2,revision,s 3,directory,s
core/v1.GlusterfsPersistentVolumeSource 1,endpoints,s,p 2,path,s,p 3,readOnly,b 4,endpointsNamespace,s,p
core/v1.GlusterfsVolumeSource 1,endpoints,s,p 2,path,s,p 3,readOnly,b
core/v1.HTTPGetAction 1,path,s 2,port,intstr.IntOrString 3,host,s 4,scheme,s 5,httpHeaders,[]HTTPHeader 6,protocol,s,p
core/v1.HTTPHeader 1,name,s,p 2,value,s,p
core/v1.HostAlias 1,ip,s,p 2,hostnames,[]s
core/v1.HostIP 1,ip,s,p
core/v1.HostPathVolumeSource 1,path,s,p 2,type,s,p
core/v1.ISCSIPersistentVolumeSource 1,targetPortal,s,p 2,iqn,s,p 3,lun,i32,p 4,iscsiInterface,s 5,fsType,s 6,readOnly,b 7,portals,[]s 8,chapAuthDiscovery,b 11,chapAuthSession,b 10,secretRef,SecretReference,p 12,initiatorName,s,p
core/v1.ISCSIVolumeSource 1,targetPortal,s,p 2,iqn,s,p 3,lun,i32,p 4,iscsiInterface,s 5,fsType,s 6,readOnly,b 7,portals,[]s 8,chapAuthDiscovery,b 11,chapAuthSession,b 10,secretRef,LocalObjectReference,p 12,initiatorName,s,p
core/v1.ImageVolumeSource 1,reference,s 2,pullPolicy,s
core/v1.ImageVolumeStatus 1,imageRef,s
core/v1.KeyToPath 1,key,s,p 2,path,s,p 3,mode,i32,p 4,user,i64,p
core/v1.Lifecycle 1,postStart,LifecycleHandler,p 2,preStop,LifecycleHandler,p 3,stopSignal,s,p
core/v1.LifecycleHandler 1,exec,ExecAction,p 2,httpGet,HTTPGetAction,p 3,tcpSocket,TCPSocketAction,p 4,sleep,SleepAction,p
core/v1.LimitRange 1,metadata,meta/v1.ObjectMeta 2,spec,LimitRangeSpec
core/v1.LimitRangeItem 1,type,s,p 2,max,{resource.Quantity} 3,min,{resource.Quantity} 4,default,{resource.Quantity} 5,defaultRequest,{resource.Quantity} 6,maxLimitRequestRatio,{resource.Quantity}
core/v1.LimitRangeList 1,metadata,meta/v1.ListMeta 2,items,[]LimitRange
core/v1.LimitRangeSpec 1,limits,[]LimitRangeItem
core/v1.LinuxContainerUser 1,uid,i64,p 2,gid,i64,p 3,supplementalGroups,[]i64
core/v1.List 1,metadata,meta/v1.ListMeta 2,items,[]runtime.RawExtension
core/v1.LoadBalancerIngress 1,ip,s 2,hostname,s 3,ipMode,s,p 4,ports,[]PortStatus
core/v1.LoadBalancerStatus 1,ingress,[]LoadBalancerIngress
core/v1.LocalObjectReference 1,name,s
core/v1.LocalVolumeSource 1,path,s,p 2,fsType,s,p
core/v1.ModifyVolumeStatus 1,targetVolumeAttributesClassName,s 2,status,s,p
core/v1.NFSVolumeSource 1,server,s,p 2,path,s,p 3,readOnly,b
core/v1.Namespace 1,metadata,meta/v1.ObjectMeta 2,spec,NamespaceSpec 3,status,NamespaceStatus
core/v1.NamespaceCondition 1,type,s,p 2,status,s,p 4,lastTransitionTime,meta/v1.Time 5,reason,s 6,message,s
core/v1.NamespaceList 1,metadata,meta/v1.ListMeta 2,items,[]Namespace
core/v1.NamespaceSpec 1,finalizers,[]s
core/v1.NamespaceStatus 1,phase,s 2,conditions,[]NamespaceCondition
core/v1.Node 1,metadata,meta/v1.ObjectMeta 2,spec,NodeSpec 3,status,NodeStatus
core/v1.NodeAddress 1,type,s,p 2,address,s,p
core/v1.NodeAffinity 1,requiredDuringSchedulingIgnoredDuringExecution,NodeSelector,p 2,preferredDuringSchedulingIgnoredDuringExecution,[]PreferredSchedulingTerm
core/v1.NodeAllocatableMappedResources 1,name,s,p 2,quantity,resource.Quantity,p
core/v1.NodeAllocatableOverheadResources 1,name,s,p 2,perPod,resource.Quantity,p 3,perContainer,resource.Quantity,p
core/v1.NodeAllocatableResourceClaimStatus 1,resourceClaimName,s,p 2,containers,[]s 4,mapping,[]NodeAllocatableMappedResources 5,overhead,[]NodeAllocatableOverheadResources
core/v1.NodeCondition 1,type,s,p 2,status,s,p 3,lastHeartbeatTime,meta/v1.Time 4,lastTransitionTime,meta/v1.Time 5,reason,s 6,message,s
core/v1.NodeConfigSource 2,configMap,ConfigMapNodeConfigSource,p
core/v1.NodeConfigStatus 1,assigned,NodeConfigSource,p 2,active,NodeConfigSource,p 3,lastKnownGood,NodeConfigSource,p 4,error,s
core/v1.NodeDaemonEndpoints 1,kubeletEndpoint,DaemonEndpoint
core/v1.NodeFeatures 1,supplementalGroupsPolicy,b,p
core/v1.NodeList 1,metadata,meta/v1.ListMeta 2,items,[]Node
core/v1.NodePodPreemptionPolicy 1,disableResizePreemption,[]s
core/v1.NodeProxyOptions 1,path,s
core/v1.NodeRuntimeHandler 1,name,s,p 2,features,NodeRuntimeHandlerFeatures,p
core/v1.NodeRuntimeHandlerFeatures 1,recursiveReadOnlyMounts,b,p 2,userNamespaces,b,p
core/v1.NodeSelector 1,nodeSelectorTerms,[]NodeSelectorTerm
core/v1.NodeSelectorRequirement 1,key,s,p 2,operator,s,p 3,values,[]s
core/v1.NodeSelectorTerm 1,matchExpressions,[]NodeSelectorRequirement 2,matchFields,[]NodeSelectorRequirement
core/v1.NodeSpec 1,podCIDR,s 7,podCIDRs,[]s 3,providerID,s 4,unschedulable,b 5,taints,[]Taint 6,configSource,NodeConfigSource,p 2,externalID,s 8,podPreemptionPolicy,NodePodPreemptionPolicy,p
core/v1.NodeStatus 1,capacity,{resource.Quantity} 2,allocatable,{resource.Quantity} 3,phase,s 4,conditions,[]NodeCondition 5,addresses,[]NodeAddress 6,daemonEndpoints,NodeDaemonEndpoints 7,nodeInfo,NodeSystemInfo 8,images,[]ContainerImage 9,volumesInUse,[]s 10,volumesAttached,[]AttachedVolume 11,config,NodeConfigStatus,p 12,runtimeHandlers,[]NodeRuntimeHandler 13,features,NodeFeatures,p 14,declaredFeatures,[]s
core/v1.NodeSwapStatus 1,capacity,i64,p
core/v1.NodeSystemInfo 1,machineID,s,p 2,systemUUID,s,p 3,bootID,s,p 4,kernelVersion,s,p 5,osImage,s,p 6,containerRuntimeVersion,s,p 7,kubeletVersion,s,p 8,kubeProxyVersion,s,p 9,operatingSystem,s,p 10,architecture,s,p 11,swap,NodeSwapStatus,p
core/v1.ObjectFieldSelector 1,apiVersion,s 2,fieldPath,s,p
core/v1.ObjectReference 1,kind,s 2,namespace,s 3,name,s 4,uid,s 5,apiVersion,s 6,resourceVersion,s 7,fieldPath,s
core/v1.PersistentVolume 1,metadata,meta/v1.ObjectMeta 2,spec,PersistentVolumeSpec 3,status,PersistentVolumeStatus
core/v1.PersistentVolumeClaim 1,metadata,meta/v1.ObjectMeta 2,spec,PersistentVolumeClaimSpec 3,status,PersistentVolumeClaimStatus
core/v1.PersistentVolumeClaimCondition 1,type,s,p 2,status,s,p 3,lastProbeTime,meta/v1.Time 4,lastTransitionTime,meta/v1.Time 5,reason,s 6,message,s
core/v1.PersistentVolumeClaimList 1,metadata,meta/v1.ListMeta 2,items,[]PersistentVolumeClaim
core/v1.PersistentVolumeClaimSpec 1,accessModes,[]s 4,selector,meta/v1.LabelSelector,p 2,resources,VolumeResourceRequirements 3,volumeName,s 5,storageClassName,s,p 6,volumeMode,s,p 7,dataSource,TypedLocalObjectReference,p 8,dataSourceRef,TypedObjectReference,p 9,volumeAttributesClassName,s,p
core/v1.PersistentVolumeClaimStatus 1,phase,s 2,accessModes,[]s 3,capacity,{resource.Quantity} 4,conditions,[]PersistentVolumeClaimCondition 5,allocatedResources,{resource.Quantity} 7,allocatedResourceStatuses,{s} 8,currentVolumeAttributesClassName,s,p 9,modifyVolumeStatus,ModifyVolumeStatus,p 10,healthStatus,VolumeHealthStatus,p
core/v1.PersistentVolumeClaimTemplate 1,metadata,meta/v1.ObjectMeta 2,spec,PersistentVolumeClaimSpec
core/v1.PersistentVolumeClaimVolumeSource 1,claimName,s,p 2,readOnly,b
core/v1.PersistentVolumeList 1,metadata,meta/v1.ListMeta 2,items,[]PersistentVolume
core/v1.PersistentVolumeSource 1,gcePersistentDisk,GCEPersistentDiskVolumeSource,p 2,awsElasticBlockStore,AWSElasticBlockStoreVolumeSource,p 3,hostPath,HostPathVolumeSource,p 4,glusterfs,GlusterfsPersistentVolumeSource,p 5,nfs,NFSVolumeSource,p 6,rbd,RBDPersistentVolumeSource,p 7,iscsi,ISCSIPersistentVolumeSource,p 8,cinder,CinderPersistentVolumeSource,p 9,cephfs,CephFSPersistentVolumeSource,p 10,fc,FCVolumeSource,p 11,flocker,FlockerVolumeSource,p 12,flexVolume,FlexPersistentVolumeSource,p 13,azureFile,AzureFilePersistentVolumeSource,p 14,vsphereVolume,VsphereVirtualDiskVolumeSource,p 15,quobyte,QuobyteVolumeSource,p 16,azureDisk,AzureDiskVolumeSource,p 17,photonPersistentDisk,PhotonPersistentDiskVolumeSource,p 18,portworxVolume,PortworxVolumeSource,p 19,scaleIO,ScaleIOPersistentVolumeSource,p 20,local,LocalVolumeSource,p 21,storageos,StorageOSPersistentVolumeSource,p 22,csi,CSIPersistentVolumeSource,p
core/v1.PersistentVolumeSpec 1,capacity,{resource.Quantity} 2,,PersistentVolumeSource,i 3,accessModes,[]s 4,claimRef,ObjectReference,p 5,persistentVolumeReclaimPolicy,s 6,storageClassName,s 7,mountOptions,[]s 8,volumeMode,s,p 9,nodeAffinity,VolumeNodeAffinity,p 10,volumeAttributesClassName,s,p
core/v1.PersistentVolumeStatus 1,phase,s 2,message,s 3,reason,s 4,lastPhaseTransitionTime,meta/v1.Time,p
core/v1.PhotonPersistentDiskVolumeSource 1,pdID,s,p 2,fsType,s
core/v1.Pod 1,metadata,meta/v1.ObjectMeta 2,spec,PodSpec 3,status,PodStatus
core/v1.PodAffinity 1,requiredDuringSchedulingIgnoredDuringExecution,[]PodAffinityTerm 2,preferredDuringSchedulingIgnoredDuringExecution,[]WeightedPodAffinityTerm
core/v1.PodAffinityTerm 1,labelSelector,meta/v1.LabelSelector,p 2,namespaces,[]s 3,topologyKey,s,p 4,namespaceSelector,meta/v1.LabelSelector,p 5,matchLabelKeys,[]s 6,mismatchLabelKeys,[]s
core/v1.PodAntiAffinity 1,requiredDuringSchedulingIgnoredDuringExecution,[]PodAffinityTerm 2,preferredDuringSchedulingIgnoredDuringExecution,[]WeightedPodAffinityTerm
core/v1.PodAttachOptions 1,stdin,b 2,stdout,b 3,stderr,b 4,tty,b 5,container,s
core/v1.PodCertificateProjection 1,signerName,s 2,keyType,s 3,maxExpirationSeconds,i32,p 4,credentialBundlePath,s 5,keyPath,s 6,certificateChainPath,s 7,userAnnotations,{s} 8,user,i64,p
core/v1.PodCondition 1,type,s,p 7,observedGeneration,i64 2,status,s,p 3,lastProbeTime,meta/v1.Time 4,lastTransitionTime,meta/v1.Time 5,reason,s 6,message,s
core/v1.PodDNSConfig 1,nameservers,[]s 2,searches,[]s 3,options,[]PodDNSConfigOption
core/v1.PodDNSConfigOption 1,name,s 2,value,s,p
core/v1.PodExecOptions 1,stdin,b 2,stdout,b 3,stderr,b 4,tty,b 5,container,s 6,command,[]s,p
core/v1.PodExtendedResourceClaimStatus 1,requestMappings,[]ContainerExtendedResourceRequest 2,resourceClaimName,s,p
core/v1.PodIP 1,ip,s,p
core/v1.PodList 1,metadata,meta/v1.ListMeta 2,items,[]Pod
core/v1.PodLogOptions 1,container,s 2,follow,b 3,previous,b 4,sinceSeconds,i64,p 5,sinceTime,meta/v1.Time,p 6,timestamps,b 7,tailLines,i64,p 8,limitBytes,i64,p 9,insecureSkipTLSVerifyBackend,b 10,stream,s,p
core/v1.PodOS 1,name,s,p
core/v1.PodPortForwardOptions 1,ports,[]i32
core/v1.PodProxyOptions 1,path,s
core/v1.PodReadinessGate 1,conditionType,s,p
core/v1.PodResourceClaim 1,name,s,p 3,resourceClaimName,s,p 4,resourceClaimTemplateName,s,p
core/v1.PodResourceClaimStatus 1,name,s,p 2,resourceClaimName,s,p
core/v1.PodSchedulingGate 1,name,s,p
core/v1.PodSchedulingGroup 1,podGroupName,s,p
core/v1.PodSecurityContext 1,seLinuxOptions,SELinuxOptions,p 8,windowsOptions,WindowsSecurityContextOptions,p 2,runAsUser,i64,p 6,runAsGroup,i64,p 3,runAsNonRoot,b,p 4,supplementalGroups,[]i64 12,supplementalGroupsPolicy,s,p 5,fsGroup,i64,p 7,sysctls,[]Sysctl 9,fsGroupChangePolicy,s,p 10,seccompProfile,SeccompProfile,p 11,appArmorProfile,AppArmorProfile,p 13,seLinuxChangePolicy,s,p
core/v1.PodSignature 1,podController,meta/v1.OwnerReference,p
core/v1.PodSpec 1,volumes,[]Volume 20,initContainers,[]Container 2,containers,[]Container 34,ephemeralContainers,[]EphemeralContainer 3,restartPolicy,s 4,terminationGracePeriodSeconds,i64,p 5,activeDeadlineSeconds,i64,p 6,dnsPolicy,s 7,nodeSelector,{s} 8,serviceAccountName,s 9,serviceAccount,s 21,automountServiceAccountToken,b,p 10,nodeName,s 11,hostNetwork,b 12,hostPID,b 13,hostIPC,b 27,shareProcessNamespace,b,p 14,securityContext,PodSecurityContext,p 15,imagePullSecrets,[]LocalObjectReference 16,hostname,s 17,subdomain,s 18,affinity,Affinity,p 19,schedulerName,s 22,tolerations,[]Toleration 23,hostAliases,[]HostAlias 24,priorityClassName,s 25,priority,i32,p 26,dnsConfig,PodDNSConfig,p 28,readinessGates,[]PodReadinessGate 29,runtimeClassName,s,p 30,enableServiceLinks,b,p 31,preemptionPolicy,s,p 32,overhead,{resource.Quantity} 33,topologySpreadConstraints,[]TopologySpreadConstraint 35,setHostnameAsFQDN,b,p 36,os,PodOS,p 37,hostUsers,b,p 38,schedulingGates,[]PodSchedulingGate 39,resourceClaims,[]PodResourceClaim 40,resources,ResourceRequirements,p 41,hostnameOverride,s,p 43,schedulingGroup,PodSchedulingGroup,p 44,evictionResponders,[]EvictionResponder
core/v1.PodStatus 17,observedGeneration,i64 1,phase,s 2,conditions,[]PodCondition 3,message,s 4,reason,s 11,nominatedNodeName,s 5,hostIP,s 16,hostIPs,[]HostIP 6,podIP,s 12,podIPs,[]PodIP 7,startTime,meta/v1.Time,p 10,initContainerStatuses,[]ContainerStatus 8,containerStatuses,[]ContainerStatus 9,qosClass,s 13,ephemeralContainerStatuses,[]ContainerStatus 14,resize,s 15,resourceClaimStatuses,[]PodResourceClaimStatus 18,extendedResourceClaimStatus,PodExtendedResourceClaimStatus,p 19,allocatedResources,{resource.Quantity} 20,resources,ResourceRequirements,p 21,nodeAllocatableResourceClaimStatuses,[]NodeAllocatableResourceClaimStatus 22,volumeHealth,[]PodVolumeHealth
core/v1.PodTemplate 1,metadata,meta/v1.ObjectMeta 2,template,PodTemplateSpec
core/v1.PodTemplateList 1,metadata,meta/v1.ListMeta 2,items,[]PodTemplate
core/v1.PodTemplateSpec 1,metadata,meta/v1.ObjectMeta 2,spec,PodSpec
core/v1.PodVolumeHealth 1,name,s,p 2,healthConditions,[]VolumeHealthCondition 3,lastTransitionTime,meta/v1.Time
core/v1.PortStatus 1,port,i32,p 2,protocol,s,p 3,error,s,p
core/v1.PortworxVolumeSource 1,volumeID,s,p 2,fsType,s 3,readOnly,b
core/v1.Preconditions 1,uid,s,p
core/v1.PreferAvoidPodsEntry 1,podSignature,PodSignature 2,evictionTime,meta/v1.Time 3,reason,s 4,message,s
core/v1.PreferredSchedulingTerm 1,weight,i32,p 2,preference,NodeSelectorTerm
core/v1.Probe 1,,ProbeHandler,i 2,initialDelaySeconds,i32 3,timeoutSeconds,i32 4,periodSeconds,i32 5,successThreshold,i32 6,failureThreshold,i32 7,terminationGracePeriodSeconds,i64,p
core/v1.ProbeHandler 1,exec,ExecAction,p 2,httpGet,HTTPGetAction,p 3,tcpSocket,TCPSocketAction,p 4,grpc,GRPCAction,p
core/v1.ProjectedVolumeSource 1,sources,[]VolumeProjection 2,defaultMode,i32,p 3,defaultUser,i64,p
core/v1.QuobyteVolumeSource 1,registry,s,p 2,volume,s,p 3,readOnly,b 4,user,s 5,group,s 6,tenant,s
core/v1.RBDPersistentVolumeSource 1,monitors,[]s,p 2,image,s,p 3,fsType,s 4,pool,s 5,user,s 6,keyring,s 7,secretRef,SecretReference,p 8,readOnly,b
core/v1.RBDVolumeSource 1,monitors,[]s,p 2,image,s,p 3,fsType,s 4,pool,s 5,user,s 6,keyring,s 7,secretRef,LocalObjectReference,p 8,readOnly,b
core/v1.RangeAllocation 1,metadata,meta/v1.ObjectMeta 2,range,s,p 3,data,y,p
core/v1.ReplicationController 1,metadata,meta/v1.ObjectMeta 2,spec,ReplicationControllerSpec 3,status,ReplicationControllerStatus
core/v1.ReplicationControllerCondition 1,type,s,p 2,status,s,p 3,lastTransitionTime,meta/v1.Time 4,reason,s 5,message,s
core/v1.ReplicationControllerList 1,metadata,meta/v1.ListMeta 2,items,[]ReplicationController
core/v1.ReplicationControllerSpec 1,replicas,i32,p 4,minReadySeconds,i32 2,selector,{s} 3,template,PodTemplateSpec,p
core/v1.ReplicationControllerStatus 1,replicas,i32,p 2,fullyLabeledReplicas,i32 4,readyReplicas,i32 5,availableReplicas,i32 3,observedGeneration,i64 6,conditions,[]ReplicationControllerCondition
core/v1.ResourceClaim 1,name,s,p 2,request,s
core/v1.ResourceFieldSelector 1,containerName,s 2,resource,s,p 3,divisor,resource.Quantity
core/v1.ResourceHealth 1,resourceID,s,p 2,health,s 6,message,s,p
core/v1.ResourceQuota 1,metadata,meta/v1.ObjectMeta 2,spec,ResourceQuotaSpec 3,status,ResourceQuotaStatus
core/v1.ResourceQuotaList 1,metadata,meta/v1.ListMeta 2,items,[]ResourceQuota
core/v1.ResourceQuotaSpec 1,hard,{resource.Quantity} 2,scopes,[]s 3,scopeSelector,ScopeSelector,p
core/v1.ResourceQuotaStatus 1,hard,{resource.Quantity} 2,used,{resource.Quantity}
core/v1.ResourceRequirements 1,limits,{resource.Quantity} 2,requests,{resource.Quantity} 3,claims,[]ResourceClaim
core/v1.ResourceStatus 1,name,s,p 2,resources,[]ResourceHealth
core/v1.SELinuxOptions 1,user,s 2,role,s 3,type,s 4,level,s
core/v1.ScaleIOPersistentVolumeSource 1,gateway,s,p 2,system,s,p 3,secretRef,SecretReference,p 4,sslEnabled,b 5,protectionDomain,s 6,storagePool,s 7,storageMode,s 8,volumeName,s 9,fsType,s 10,readOnly,b
core/v1.ScaleIOVolumeSource 1,gateway,s,p 2,system,s,p 3,secretRef,LocalObjectReference,p 4,sslEnabled,b 5,protectionDomain,s 6,storagePool,s 7,storageMode,s 8,volumeName,s 9,fsType,s 10,readOnly,b
core/v1.ScopeSelector 1,matchExpressions,[]ScopedResourceSelectorRequirement
core/v1.ScopedResourceSelectorRequirement 1,scopeName,s,p 2,operator,s,p 3,values,[]s
core/v1.SeccompProfile 1,type,s,p 2,localhostProfile,s,p
core/v1.Secret 1,metadata,meta/v1.ObjectMeta 5,immutable,b,p 2,data,{y} 4,stringData,{s} 3,type,s
core/v1.SecretEnvSource 1,,LocalObjectReference,i 2,optional,b,p
core/v1.SecretKeySelector 1,,LocalObjectReference,i 2,key,s,p 3,optional,b,p
core/v1.SecretList 1,metadata,meta/v1.ListMeta 2,items,[]Secret
core/v1.SecretProjection 1,,LocalObjectReference,i 2,items,[]KeyToPath 4,optional,b,p
core/v1.SecretReference 1,name,s 2,namespace,s
core/v1.SecretVolumeSource 1,secretName,s 2,items,[]KeyToPath 3,defaultMode,i32,p 4,optional,b,p 5,defaultUser,i64,p
core/v1.SecurityContext 1,capabilities,Capabilities,p 2,privileged,b,p 3,seLinuxOptions,SELinuxOptions,p 10,windowsOptions,WindowsSecurityContextOptions,p 4,runAsUser,i64,p 8,runAsGroup,i64,p 5,runAsNonRoot,b,p 6,readOnlyRootFilesystem,b,p 7,allowPrivilegeEscalation,b,p 9,procMount,s,p 11,seccompProfile,SeccompProfile,p 12,appArmorProfile,AppArmorProfile,p
core/v1.SerializedReference 1,reference,ObjectReference
core/v1.Service 1,metadata,meta/v1.ObjectMeta 2,spec,ServiceSpec 3,status,ServiceStatus
core/v1.ServiceAccount 1,metadata,meta/v1.ObjectMeta 2,secrets,[]ObjectReference 3,imagePullSecrets,[]LocalObjectReference 4,automountServiceAccountToken,b,p
core/v1.ServiceAccountList 1,metadata,meta/v1.ListMeta 2,items,[]ServiceAccount
core/v1.ServiceAccountTokenProjection 1,audience,s 2,expirationSeconds,i64,p 3,path,s,p 4,user,i64,p
core/v1.ServiceList 1,metadata,meta/v1.ListMeta 2,items,[]Service
core/v1.ServicePort 1,name,s 2,protocol,s 6,appProtocol,s,p 3,port,i32,p 4,targetPort,intstr.IntOrString 5,nodePort,i32
core/v1.ServiceProxyOptions 1,path,s
core/v1.ServiceSpec 1,ports,[]ServicePort 2,selector,{s} 3,clusterIP,s 18,clusterIPs,[]s 4,type,s 5,externalIPs,[]s 7,sessionAffinity,s 8,loadBalancerIP,s 9,loadBalancerSourceRanges,[]s 10,externalName,s 11,externalTrafficPolicy,s 12,healthCheckNodePort,i32 13,publishNotReadyAddresses,b 14,sessionAffinityConfig,SessionAffinityConfig,p 19,ipFamilies,[]s 17,ipFamilyPolicy,s,p 20,allocateLoadBalancerNodePorts,b,p 21,loadBalancerClass,s,p 22,internalTrafficPolicy,s,p 23,trafficDistribution,s,p
core/v1.ServiceStatus 1,loadBalancer,LoadBalancerStatus 2,conditions,[]meta/v1.Condition
core/v1.SessionAffinityConfig 1,clientIP,ClientIPConfig,p
core/v1.SleepAction 1,seconds,i64,p
core/v1.StorageOSPersistentVolumeSource 1,volumeName,s 2,volumeNamespace,s 3,fsType,s 4,readOnly,b 5,secretRef,ObjectReference,p
core/v1.StorageOSVolumeSource 1,volumeName,s 2,volumeNamespace,s 3,fsType,s 4,readOnly,b 5,secretRef,LocalObjectReference,p
core/v1.Sysctl 1,name,s,p 2,value,s,p
core/v1.TCPSocketAction 1,port,intstr.IntOrString 2,host,s
core/v1.Taint 1,key,s,p 2,value,s 3,effect,s,p 4,timeAdded,meta/v1.Time,p
core/v1.Toleration 1,key,s 2,operator,s 3,value,s 4,effect,s 5,tolerationSeconds,i64,p
core/v1.TopologySelectorLabelRequirement 1,key,s,p 2,values,[]s,p
core/v1.TopologySelectorTerm 1,matchLabelExpressions,[]TopologySelectorLabelRequirement
core/v1.TopologySpreadConstraint 1,maxSkew,i32,p 2,topologyKey,s,p 3,whenUnsatisfiable,s,p 4,labelSelector,meta/v1.LabelSelector,p 5,minDomains,i32,p 6,nodeAffinityPolicy,s,p 7,nodeTaintsPolicy,s,p 8,matchLabelKeys,[]s
core/v1.TypedLocalObjectReference 1,apiGroup,s,p 2,kind,s,p 3,name,s,p
core/v1.TypedObjectReference 1,apiGroup,s,p 2,kind,s,p 3,name,s,p 4,namespace,s,p
core/v1.Volume 1,name,s,p 2,,VolumeSource,i
core/v1.VolumeDevice 1,name,s,p 2,devicePath,s,p
core/v1.VolumeHealthCondition 1,status,s,p 2,reason,s,p 3,message,s
core/v1.VolumeHealthStatus 1,healthConditions,[]VolumeHealthCondition 2,lastTransitionTime,meta/v1.Time
core/v1.VolumeMount 1,name,s,p 2,readOnly,b 7,recursiveReadOnly,s,p 3,mountPath,s,p 4,subPath,s 5,mountPropagation,s,p 6,subPathExpr,s 8,bindMountOptions,[]s
core/v1.VolumeMountStatus 1,name,s,p 2,mountPath,s,p 3,readOnly,b 4,recursiveReadOnly,s,p 5,volumeStatus,VolumeStatus,p
core/v1.VolumeNodeAffinity 1,required,NodeSelector,p
core/v1.VolumeProjection 1,secret,SecretProjection,p 2,downwardAPI,DownwardAPIProjection,p 3,configMap,ConfigMapProjection,p 4,serviceAccountToken,ServiceAccountTokenProjection,p 5,clusterTrustBundle,ClusterTrustBundleProjection,p 6,podCertificate,PodCertificateProjection,p
core/v1.VolumeResourceRequirements 1,limits,{resource.Quantity} 2,requests,{resource.Quantity}
core/v1.VolumeSource 1,hostPath,HostPathVolumeSource,p 2,emptyDir,EmptyDirVolumeSource,p 3,gcePersistentDisk,GCEPersistentDiskVolumeSource,p 4,awsElasticBlockStore,AWSElasticBlockStoreVolumeSource,p 5,gitRepo,GitRepoVolumeSource,p 6,secret,SecretVolumeSource,p 7,nfs,NFSVolumeSource,p 8,iscsi,ISCSIVolumeSource,p 9,glusterfs,GlusterfsVolumeSource,p 10,persistentVolumeClaim,PersistentVolumeClaimVolumeSource,p 11,rbd,RBDVolumeSource,p 12,flexVolume,FlexVolumeSource,p 13,cinder,CinderVolumeSource,p 14,cephfs,CephFSVolumeSource,p 15,flocker,FlockerVolumeSource,p 16,downwardAPI,DownwardAPIVolumeSource,p 17,fc,FCVolumeSource,p 18,azureFile,AzureFileVolumeSource,p 19,configMap,ConfigMapVolumeSource,p 20,vsphereVolume,VsphereVirtualDiskVolumeSource,p 21,quobyte,QuobyteVolumeSource,p 22,azureDisk,AzureDiskVolumeSource,p 23,photonPersistentDisk,PhotonPersistentDiskVolumeSource,p 26,projected,ProjectedVolumeSource,p 24,portworxVolume,PortworxVolumeSource,p 25,scaleIO,ScaleIOVolumeSource,p 27,storageos,StorageOSVolumeSource,p 28,csi,CSIVolumeSource,p 29,ephemeral,EphemeralVolumeSource,p 30,image,ImageVolumeSource,p
core/v1.VolumeStatus 1,image,ImageVolumeStatus,p
core/v1.VsphereVirtualDiskVolumeSource 1,volumePath,s,p 2,fsType,s 3,storagePolicyName,s 4,storagePolicyID,s
core/v1.WeightedPodAffinityTerm 1,weight,i32,p 2,podAffinityTerm,PodAffinityTerm
core/v1.WindowsSecurityContextOptions 1,gmsaCredentialSpecName,s,p 2,gmsaCredentialSpec,s,p 3,runAsUserName,s,p 4,hostProcess,b,p
apps/v1.ControllerRevision 1,metadata,meta/v1.ObjectMeta 2,data,runtime.RawExtension 3,revision,i64,p
apps/v1.ControllerRevisionList 1,metadata,meta/v1.ListMeta 2,items,[]ControllerRevision
apps/v1.DaemonSet 1,metadata,meta/v1.ObjectMeta 2,spec,DaemonSetSpec 3,status,DaemonSetStatus
apps/v1.DaemonSetCondition 1,type,s,p 2,status,s,p 3,lastTransitionTime,meta/v1.Time 4,reason,s 5,message,s
apps/v1.DaemonSetList 1,metadata,meta/v1.ListMeta 2,items,[]DaemonSet
apps/v1.DaemonSetSpec 1,selector,meta/v1.LabelSelector,p 2,template,core/v1.PodTemplateSpec 3,updateStrategy,DaemonSetUpdateStrategy 4,minReadySeconds,i32 6,revisionHistoryLimit,i32,p
apps/v1.DaemonSetStatus 1,currentNumberScheduled,i32,p 2,numberMisscheduled,i32,p 3,desiredNumberScheduled,i32,p 4,numberReady,i32,p 5,observedGeneration,i64 6,updatedNumberScheduled,i32 7,numberAvailable,i32 8,numberUnavailable,i32 9,collisionCount,i32,p 10,conditions,[]DaemonSetCondition
apps/v1.DaemonSetUpdateStrategy 1,type,s 2,rollingUpdate,RollingUpdateDaemonSet,p
apps/v1.Deployment 1,metadata,meta/v1.ObjectMeta 2,spec,DeploymentSpec 3,status,DeploymentStatus
apps/v1.DeploymentCondition 1,type,s,p 2,status,s,p 6,lastUpdateTime,meta/v1.Time 7,lastTransitionTime,meta/v1.Time 4,reason,s 5,message,s
apps/v1.DeploymentList 1,metadata,meta/v1.ListMeta 2,items,[]Deployment
apps/v1.DeploymentSpec 1,replicas,i32,p 2,selector,meta/v1.LabelSelector,p 3,template,core/v1.PodTemplateSpec 4,strategy,DeploymentStrategy 5,minReadySeconds,i32 6,revisionHistoryLimit,i32,p 7,paused,b 9,progressDeadlineSeconds,i32,p
apps/v1.DeploymentStatus 1,observedGeneration,i64 2,replicas,i32 3,updatedReplicas,i32 7,readyReplicas,i32 4,availableReplicas,i32 5,unavailableReplicas,i32 9,terminatingReplicas,i32,p 6,conditions,[]DeploymentCondition 8,collisionCount,i32,p
apps/v1.DeploymentStrategy 1,type,s 2,rollingUpdate,RollingUpdateDeployment,p
apps/v1.ReplicaSet 1,metadata,meta/v1.ObjectMeta 2,spec,ReplicaSetSpec 3,status,ReplicaSetStatus
apps/v1.ReplicaSetCondition 1,type,s,p 2,status,s,p 3,lastTransitionTime,meta/v1.Time 4,reason,s 5,message,s
apps/v1.ReplicaSetList 1,metadata,meta/v1.ListMeta 2,items,[]ReplicaSet
apps/v1.ReplicaSetSpec 1,replicas,i32,p 4,minReadySeconds,i32 2,selector,meta/v1.LabelSelector,p 3,template,core/v1.PodTemplateSpec
apps/v1.ReplicaSetStatus 1,replicas,i32,p 2,fullyLabeledReplicas,i32 4,readyReplicas,i32 5,availableReplicas,i32 7,terminatingReplicas,i32,p 3,observedGeneration,i64 6,conditions,[]ReplicaSetCondition
apps/v1.RollingUpdateDaemonSet 1,maxUnavailable,intstr.IntOrString,p 2,maxSurge,intstr.IntOrString,p
apps/v1.RollingUpdateDeployment 1,maxUnavailable,intstr.IntOrString,p 2,maxSurge,intstr.IntOrString,p
apps/v1.RollingUpdateStatefulSetStrategy 1,partition,i32,p 2,maxUnavailable,intstr.IntOrString,p
apps/v1.StatefulSet 1,metadata,meta/v1.ObjectMeta 2,spec,StatefulSetSpec 3,status,StatefulSetStatus
apps/v1.StatefulSetCondition 1,type,s,p 2,status,s,p 3,lastTransitionTime,meta/v1.Time 4,reason,s 5,message,s
apps/v1.StatefulSetList 1,metadata,meta/v1.ListMeta 2,items,[]StatefulSet
apps/v1.StatefulSetOrdinals 1,start,i32,p
apps/v1.StatefulSetPersistentVolumeClaimRetentionPolicy 1,whenDeleted,s 2,whenScaled,s
apps/v1.StatefulSetSpec 1,replicas,i32,p 2,selector,meta/v1.LabelSelector,p 3,template,core/v1.PodTemplateSpec 4,volumeClaimTemplates,[]core/v1.PersistentVolumeClaim 5,serviceName,s,p 6,podManagementPolicy,s 7,updateStrategy,StatefulSetUpdateStrategy 8,revisionHistoryLimit,i32,p 9,minReadySeconds,i32 10,persistentVolumeClaimRetentionPolicy,StatefulSetPersistentVolumeClaimRetentionPolicy,p 11,ordinals,StatefulSetOrdinals,p
apps/v1.StatefulSetStatus 1,observedGeneration,i64 2,replicas,i32,p 3,readyReplicas,i32 4,currentReplicas,i32 5,updatedReplicas,i32 6,currentRevision,s 7,updateRevision,s 9,collisionCount,i32,p 10,conditions,[]StatefulSetCondition 11,availableReplicas,i32,p
apps/v1.StatefulSetUpdateStrategy 1,type,s 2,rollingUpdate,RollingUpdateStatefulSetStrategy,p
batch/v1.CronJob 1,metadata,meta/v1.ObjectMeta 2,spec,CronJobSpec 3,status,CronJobStatus
batch/v1.CronJobList 1,metadata,meta/v1.ListMeta 2,items,[]CronJob
batch/v1.CronJobSpec 1,schedule,s,p 8,timeZone,s,p 2,startingDeadlineSeconds,i64,p 3,concurrencyPolicy,s 4,suspend,b,p 5,jobTemplate,JobTemplateSpec 6,successfulJobsHistoryLimit,i32,p 7,failedJobsHistoryLimit,i32,p
batch/v1.CronJobStatus 1,active,[]core/v1.ObjectReference 4,lastScheduleTime,meta/v1.Time,p 5,lastSuccessfulTime,meta/v1.Time,p
batch/v1.Job 1,metadata,meta/v1.ObjectMeta 2,spec,JobSpec 3,status,JobStatus
batch/v1.JobCondition 1,type,s,p 2,status,s,p 3,lastProbeTime,meta/v1.Time 4,lastTransitionTime,meta/v1.Time 5,reason,s 6,message,s
batch/v1.JobList 1,metadata,meta/v1.ListMeta 2,items,[]Job
batch/v1.JobSchedulingConfiguration
batch/v1.JobSpec 1,parallelism,i32,p 2,completions,i32,p 3,activeDeadlineSeconds,i64,p 11,podFailurePolicy,PodFailurePolicy,p 16,successPolicy,SuccessPolicy,p 7,backoffLimit,i32,p 12,backoffLimitPerIndex,i32,p 13,maxFailedIndexes,i32,p 4,selector,meta/v1.LabelSelector,p 5,manualSelector,b,p 6,template,core/v1.PodTemplateSpec 8,ttlSecondsAfterFinished,i32,p 9,completionMode,s,p 10,suspend,b,p 14,podReplacementPolicy,s,p 15,managedBy,s,p 17,scheduling,JobSchedulingConfiguration,p
batch/v1.JobStatus 1,conditions,[]JobCondition 2,startTime,meta/v1.Time,p 3,completionTime,meta/v1.Time,p 4,active,i32 5,succeeded,i32 6,failed,i32 11,terminating,i32,p 7,completedIndexes,s 10,failedIndexes,s,p 8,uncountedTerminatedPods,UncountedTerminatedPods,p 9,ready,i32,p
batch/v1.JobTemplateSpec 1,metadata,meta/v1.ObjectMeta 2,spec,JobSpec
batch/v1.PodFailurePolicy 1,rules,[]PodFailurePolicyRule
batch/v1.PodFailurePolicyOnExitCodesRequirement 1,containerName,s,p 2,operator,s,p 3,values,[]i32,p
batch/v1.PodFailurePolicyOnPodConditionsPattern 1,type,s,p 2,status,s,p
batch/v1.PodFailurePolicyRule 1,action,s,p 2,onExitCodes,PodFailurePolicyOnExitCodesRequirement,p 3,onPodConditions,[]PodFailurePolicyOnPodConditionsPattern
batch/v1.SuccessPolicy 1,rules,[]SuccessPolicyRule
batch/v1.SuccessPolicyRule 1,succeededIndexes,s,p 2,succeededCount,i32,p
batch/v1.UncountedTerminatedPods 1,succeeded,[]s 2,failed,[]s
autoscaling/v1.ContainerResourceMetricSource 1,name,s,p 2,targetAverageUtilization,i32,p 3,targetAverageValue,resource.Quantity,p 5,container,s,p
autoscaling/v1.ContainerResourceMetricStatus 1,name,s,p 2,currentAverageUtilization,i32,p 3,currentAverageValue,resource.Quantity 4,container,s,p
autoscaling/v1.CrossVersionObjectReference 1,kind,s,p 2,name,s,p 3,apiVersion,s
autoscaling/v1.ExternalMetricSource 1,metricName,s,p 2,metricSelector,meta/v1.LabelSelector,p 3,targetValue,resource.Quantity,p 4,targetAverageValue,resource.Quantity,p
autoscaling/v1.ExternalMetricStatus 1,metricName,s,p 2,metricSelector,meta/v1.LabelSelector,p 3,currentValue,resource.Quantity 4,currentAverageValue,resource.Quantity,p
autoscaling/v1.HorizontalPodAutoscaler 1,metadata,meta/v1.ObjectMeta 2,spec,HorizontalPodAutoscalerSpec 3,status,HorizontalPodAutoscalerStatus
autoscaling/v1.HorizontalPodAutoscalerCondition 1,type,s,p 2,status,s,p 3,lastTransitionTime,meta/v1.Time 4,reason,s 5,message,s 6,observedGeneration,i64,p
autoscaling/v1.HorizontalPodAutoscalerList 1,metadata,meta/v1.ListMeta 2,items,[]HorizontalPodAutoscaler
autoscaling/v1.HorizontalPodAutoscalerSpec 1,scaleTargetRef,CrossVersionObjectReference 2,minReplicas,i32,p 3,maxReplicas,i32,p 4,targetCPUUtilizationPercentage,i32,p
autoscaling/v1.HorizontalPodAutoscalerStatus 1,observedGeneration,i64,p 2,lastScaleTime,meta/v1.Time,p 3,currentReplicas,i32,p 4,desiredReplicas,i32,p 5,currentCPUUtilizationPercentage,i32,p
autoscaling/v1.MetricSpec 1,type,s,p 2,object,ObjectMetricSource,p 3,pods,PodsMetricSource,p 4,resource,ResourceMetricSource,p 7,containerResource,ContainerResourceMetricSource,p 5,external,ExternalMetricSource,p
autoscaling/v1.MetricStatus 1,type,s,p 2,object,ObjectMetricStatus,p 3,pods,PodsMetricStatus,p 4,resource,ResourceMetricStatus,p 7,containerResource,ContainerResourceMetricStatus,p 5,external,ExternalMetricStatus,p
autoscaling/v1.ObjectMetricSource 1,target,CrossVersionObjectReference 2,metricName,s,p 3,targetValue,resource.Quantity 4,selector,meta/v1.LabelSelector,p 5,averageValue,resource.Quantity,p
autoscaling/v1.ObjectMetricStatus 1,target,CrossVersionObjectReference 2,metricName,s,p 3,currentValue,resource.Quantity 4,selector,meta/v1.LabelSelector,p 5,averageValue,resource.Quantity,p
autoscaling/v1.PodsMetricSource 1,metricName,s,p 2,targetAverageValue,resource.Quantity 3,selector,meta/v1.LabelSelector,p
autoscaling/v1.PodsMetricStatus 1,metricName,s,p 2,currentAverageValue,resource.Quantity 3,selector,meta/v1.LabelSelector,p
autoscaling/v1.ResourceMetricSource 1,name,s,p 2,targetAverageUtilization,i32,p 3,targetAverageValue,resource.Quantity,p
autoscaling/v1.ResourceMetricStatus 1,name,s,p 2,currentAverageUtilization,i32,p 3,currentAverageValue,resource.Quantity
autoscaling/v1.Scale 1,metadata,meta/v1.ObjectMeta 2,spec,ScaleSpec 3,status,ScaleStatus
autoscaling/v1.ScaleSpec 1,replicas,i32
autoscaling/v1.ScaleStatus 1,replicas,i32,p 2,selector,s
autoscaling/v2.ContainerResourceMetricSource 1,name,s,p 2,target,MetricTarget 3,container,s,p
autoscaling/v2.ContainerResourceMetricStatus 1,name,s,p 2,current,MetricValueStatus 3,container,s,p
autoscaling/v2.CrossVersionObjectReference 1,kind,s,p 2,name,s,p 3,apiVersion,s
autoscaling/v2.ExternalMetricSource 1,metric,MetricIdentifier 2,target,MetricTarget
autoscaling/v2.ExternalMetricStatus 1,metric,MetricIdentifier 2,current,MetricValueStatus
autoscaling/v2.HPAScalingPolicy 1,type,s,p 2,value,i32,p 3,periodSeconds,i32,p
autoscaling/v2.HPAScalingRules 3,stabilizationWindowSeconds,i32,p 1,selectPolicy,s,p 2,policies,[]HPAScalingPolicy 4,tolerance,resource.Quantity,p
autoscaling/v2.HorizontalPodAutoscaler 1,metadata,meta/v1.ObjectMeta 2,spec,HorizontalPodAutoscalerSpec 3,status,HorizontalPodAutoscalerStatus
autoscaling/v2.HorizontalPodAutoscalerBehavior 1,scaleUp,HPAScalingRules,p 2,scaleDown,HPAScalingRules,p
autoscaling/v2.HorizontalPodAutoscalerCondition 1,type,s,p 2,status,s,p 3,lastTransitionTime,meta/v1.Time 4,reason,s 5,message,s 6,observedGeneration,i64,p
autoscaling/v2.HorizontalPodAutoscalerList 1,metadata,meta/v1.ListMeta 2,items,[]HorizontalPodAutoscaler
autoscaling/v2.HorizontalPodAutoscalerSpec 1,scaleTargetRef,CrossVersionObjectReference 2,minReplicas,i32,p 3,maxReplicas,i32,p 4,metrics,[]MetricSpec 5,behavior,HorizontalPodAutoscalerBehavior,p
autoscaling/v2.HorizontalPodAutoscalerStatus 1,observedGeneration,i64,p 2,lastScaleTime,meta/v1.Time,p 3,currentReplicas,i32 4,desiredReplicas,i32,p 5,currentMetrics,[]MetricStatus 6,conditions,[]HorizontalPodAutoscalerCondition
autoscaling/v2.MetricIdentifier 1,name,s,p 2,selector,meta/v1.LabelSelector,p
autoscaling/v2.MetricSpec 1,type,s,p 2,object,ObjectMetricSource,p 3,pods,PodsMetricSource,p 4,resource,ResourceMetricSource,p 7,containerResource,ContainerResourceMetricSource,p 5,external,ExternalMetricSource,p
autoscaling/v2.MetricStatus 1,type,s,p 2,object,ObjectMetricStatus,p 3,pods,PodsMetricStatus,p 4,resource,ResourceMetricStatus,p 7,containerResource,ContainerResourceMetricStatus,p 5,external,ExternalMetricStatus,p
autoscaling/v2.MetricTarget 1,type,s,p 2,value,resource.Quantity,p 3,averageValue,resource.Quantity,p 4,averageUtilization,i32,p
autoscaling/v2.MetricValueStatus 1,value,resource.Quantity,p 2,averageValue,resource.Quantity,p 3,averageUtilization,i32,p
autoscaling/v2.ObjectMetricSource 1,describedObject,CrossVersionObjectReference 2,target,MetricTarget 3,metric,MetricIdentifier
autoscaling/v2.ObjectMetricStatus 1,metric,MetricIdentifier 2,current,MetricValueStatus 3,describedObject,CrossVersionObjectReference
autoscaling/v2.PodsMetricSource 1,metric,MetricIdentifier 2,target,MetricTarget
autoscaling/v2.PodsMetricStatus 1,metric,MetricIdentifier 2,current,MetricValueStatus
autoscaling/v2.ResourceMetricSource 1,name,s,p 2,target,MetricTarget
autoscaling/v2.ResourceMetricStatus 1,name,s,p 2,current,MetricValueStatus
flowcontrol/v1.ExemptPriorityLevelConfiguration 1,nominalConcurrencyShares,i32,p 2,lendablePercent,i32,p
flowcontrol/v1.FlowDistinguisherMethod 1,type,s,p
flowcontrol/v1.FlowSchema 1,metadata,meta/v1.ObjectMeta 2,spec,FlowSchemaSpec 3,status,FlowSchemaStatus
flowcontrol/v1.FlowSchemaCondition 1,type,s 2,status,s 3,lastTransitionTime,meta/v1.Time 4,reason,s 5,message,s
flowcontrol/v1.FlowSchemaList 1,metadata,meta/v1.ListMeta 2,items,[]FlowSchema
flowcontrol/v1.FlowSchemaSpec 1,priorityLevelConfiguration,PriorityLevelConfigurationReference,p 2,matchingPrecedence,i32 3,distinguisherMethod,FlowDistinguisherMethod,p 4,rules,[]PolicyRulesWithSubjects
flowcontrol/v1.FlowSchemaStatus 1,conditions,[]FlowSchemaCondition
flowcontrol/v1.GroupSubject 1,name,s,p
flowcontrol/v1.LimitResponse 1,type,s,p 2,queuing,QueuingConfiguration,p
flowcontrol/v1.LimitedPriorityLevelConfiguration 1,nominalConcurrencyShares,i32,p 2,limitResponse,LimitResponse 3,lendablePercent,i32,p 4,borrowingLimitPercent,i32,p
flowcontrol/v1.NonResourcePolicyRule 1,verbs,[]s,p 6,nonResourceURLs,[]s,p
flowcontrol/v1.PolicyRulesWithSubjects 1,subjects,[]Subject,p 2,resourceRules,[]ResourcePolicyRule 3,nonResourceRules,[]NonResourcePolicyRule
flowcontrol/v1.PriorityLevelConfiguration 1,metadata,meta/v1.ObjectMeta 2,spec,PriorityLevelConfigurationSpec 3,status,PriorityLevelConfigurationStatus
flowcontrol/v1.PriorityLevelConfigurationCondition 1,type,s 2,status,s 3,lastTransitionTime,meta/v1.Time 4,reason,s 5,message,s
flowcontrol/v1.PriorityLevelConfigurationList 1,metadata,meta/v1.ListMeta 2,items,[]PriorityLevelConfiguration
flowcontrol/v1.PriorityLevelConfigurationReference 1,name,s,p
flowcontrol/v1.PriorityLevelConfigurationSpec 1,type,s,p 2,limited,LimitedPriorityLevelConfiguration,p 3,exempt,ExemptPriorityLevelConfiguration,p
flowcontrol/v1.PriorityLevelConfigurationStatus 1,conditions,[]PriorityLevelConfigurationCondition
flowcontrol/v1.QueuingConfiguration 1,queues,i32 2,handSize,i32 3,queueLengthLimit,i32
flowcontrol/v1.ResourcePolicyRule 1,verbs,[]s,p 2,apiGroups,[]s,p 3,resources,[]s,p 4,clusterScope,b 5,namespaces,[]s
flowcontrol/v1.ServiceAccountSubject 1,namespace,s,p 2,name,s,p
flowcontrol/v1.Subject 1,kind,s,p 2,user,UserSubject,p 3,group,GroupSubject,p 4,serviceAccount,ServiceAccountSubject,p
flowcontrol/v1.UserSubject 1,name,s,p
coordination/v1.Lease 1,metadata,meta/v1.ObjectMeta 2,spec,LeaseSpec
coordination/v1.LeaseList 1,metadata,meta/v1.ListMeta 2,items,[]Lease
coordination/v1.LeaseSpec 1,holderIdentity,s,p 2,leaseDurationSeconds,i32,p 3,acquireTime,meta/v1.MicroTime,p 4,renewTime,meta/v1.MicroTime,p 5,leaseTransitions,i32,p 6,strategy,s,p 7,preferredHolder,s,p
scheduling/v1.PriorityClass 1,metadata,meta/v1.ObjectMeta 2,value,i32,p 3,globalDefault,b 4,description,s 5,preemptionPolicy,s,p
scheduling/v1.PriorityClassList 1,metadata,meta/v1.ListMeta 2,items,[]PriorityClass
storage/v1.CSIDriver 1,metadata,meta/v1.ObjectMeta 2,spec,CSIDriverSpec
storage/v1.CSIDriverList 1,metadata,meta/v1.ListMeta 2,items,[]CSIDriver
storage/v1.CSIDriverSpec 1,attachRequired,b,p 2,podInfoOnMount,b,p 3,volumeLifecycleModes,[]s 4,storageCapacity,b,p 5,fsGroupPolicy,s,p 6,tokenRequests,[]TokenRequest 7,requiresRepublish,b,p 8,seLinuxMount,b,p 9,nodeAllocatableUpdatePeriodSeconds,i64,p 10,serviceAccountTokenInSecrets,b,p 11,preventPodSchedulingIfMissing,b,p
storage/v1.CSINode 1,metadata,meta/v1.ObjectMeta 2,spec,CSINodeSpec 3,status,CSINodeStatus
storage/v1.CSINodeDriver 1,name,s,p 2,nodeID,s,p 3,topologyKeys,[]s,p 4,allocatable,VolumeNodeResources,p
storage/v1.CSINodeList 1,metadata,meta/v1.ListMeta 2,items,[]CSINode
storage/v1.CSINodeSpec 1,drivers,[]CSINodeDriver
storage/v1.CSINodeStatus 1,storageHealth,[]StorageHealth
storage/v1.CSIStorageCapacity 1,metadata,meta/v1.ObjectMeta 2,nodeTopology,meta/v1.LabelSelector,p 3,storageClassName,s,p 4,capacity,resource.Quantity,p 5,maximumVolumeSize,resource.Quantity,p
storage/v1.CSIStorageCapacityList 1,metadata,meta/v1.ListMeta 2,items,[]CSIStorageCapacity
storage/v1.StorageClass 1,metadata,meta/v1.ObjectMeta 2,provisioner,s,p 3,parameters,{s} 4,reclaimPolicy,s,p 5,mountOptions,[]s 6,allowVolumeExpansion,b,p 7,volumeBindingMode,s,p 8,allowedTopologies,[]core/v1.TopologySelectorTerm
storage/v1.StorageClassList 1,metadata,meta/v1.ListMeta 2,items,[]StorageClass
storage/v1.StorageHealth 1,name,s,p 2,healthConditions,[]StorageHealthCondition
storage/v1.StorageHealthCondition 1,status,s,p 2,reason,s,p 3,message,s 4,accessMode,s,p 5,volumeMode,s,p 6,lastTransitionTime,meta/v1.Time
storage/v1.TokenRequest 1,audience,s,p 2,expirationSeconds,i64,p
storage/v1.VolumeAttachment 1,metadata,meta/v1.ObjectMeta 2,spec,VolumeAttachmentSpec 3,status,VolumeAttachmentStatus
storage/v1.VolumeAttachmentList 1,metadata,meta/v1.ListMeta 2,items,[]VolumeAttachment
storage/v1.VolumeAttachmentSource 1,persistentVolumeName,s,p 2,inlineVolumeSpec,core/v1.PersistentVolumeSpec,p
storage/v1.VolumeAttachmentSpec 1,attacher,s,p 2,source,VolumeAttachmentSource 3,nodeName,s,p
storage/v1.VolumeAttachmentStatus 1,attached,b,p 2,attachmentMetadata,{s} 3,attachError,VolumeError,p 4,detachError,VolumeError,p
storage/v1.VolumeAttributesClass 1,metadata,meta/v1.ObjectMeta 2,driverName,s,p 3,parameters,{s}
storage/v1.VolumeAttributesClassList 1,metadata,meta/v1.ListMeta 2,items,[]VolumeAttributesClass
storage/v1.VolumeError 1,time,meta/v1.Time 2,message,s 3,errorCode,i32,p
storage/v1.VolumeNodeResources 1,count,i32,p
rbac/v1.AggregationRule 1,clusterRoleSelectors,[]meta/v1.LabelSelector
rbac/v1.ClusterRole 1,metadata,meta/v1.ObjectMeta 2,rules,[]PolicyRule 3,aggregationRule,AggregationRule,p
rbac/v1.ClusterRoleBinding 1,metadata,meta/v1.ObjectMeta 2,subjects,[]Subject 3,roleRef,RoleRef
rbac/v1.ClusterRoleBindingList 1,metadata,meta/v1.ListMeta 2,items,[]ClusterRoleBinding
rbac/v1.ClusterRoleList 1,metadata,meta/v1.ListMeta 2,items,[]ClusterRole
rbac/v1.PolicyRule 1,verbs,[]s,p 2,apiGroups,[]s 3,resources,[]s 4,resourceNames,[]s 5,nonResourceURLs,[]s
rbac/v1.Role 1,metadata,meta/v1.ObjectMeta 2,rules,[]PolicyRule
rbac/v1.RoleBinding 1,metadata,meta/v1.ObjectMeta 2,subjects,[]Subject 3,roleRef,RoleRef
rbac/v1.RoleBindingList 1,metadata,meta/v1.ListMeta 2,items,[]RoleBinding
rbac/v1.RoleList 1,metadata,meta/v1.ListMeta 2,items,[]Role
rbac/v1.RoleRef 1,apiGroup,s,p 2,kind,s,p 3,name,s,p
rbac/v1.Subject 1,kind,s,p 2,apiGroup,s 3,name,s,p 4,namespace,s
authorization/v1.ExtraValue !array 1,items,[]s
authorization/v1.FieldSelectorAttributes 1,rawSelector,s 2,requirements,[]meta/v1.FieldSelectorRequirement
authorization/v1.LabelSelectorAttributes 1,rawSelector,s 2,requirements,[]meta/v1.LabelSelectorRequirement
authorization/v1.LocalSubjectAccessReview 1,metadata,meta/v1.ObjectMeta 2,spec,SubjectAccessReviewSpec 3,status,SubjectAccessReviewStatus
authorization/v1.NonResourceAttributes 1,path,s 2,verb,s
authorization/v1.NonResourceRule 1,verbs,[]s,p 2,nonResourceURLs,[]s
authorization/v1.ResourceAttributes 1,namespace,s 2,verb,s 3,group,s 4,version,s 5,resource,s 6,subresource,s 7,name,s 8,fieldSelector,FieldSelectorAttributes,p 9,labelSelector,LabelSelectorAttributes,p
authorization/v1.ResourceRule 1,verbs,[]s,p 2,apiGroups,[]s 3,resources,[]s 4,resourceNames,[]s
authorization/v1.SelfSubjectAccessReview 1,metadata,meta/v1.ObjectMeta 2,spec,SelfSubjectAccessReviewSpec 3,status,SubjectAccessReviewStatus
authorization/v1.SelfSubjectAccessReviewSpec 1,resourceAttributes,ResourceAttributes,p 2,nonResourceAttributes,NonResourceAttributes,p
authorization/v1.SelfSubjectRulesReview 1,metadata,meta/v1.ObjectMeta 2,spec,SelfSubjectRulesReviewSpec 3,status,SubjectRulesReviewStatus
authorization/v1.SelfSubjectRulesReviewSpec 1,namespace,s
authorization/v1.SubjectAccessReview 1,metadata,meta/v1.ObjectMeta 2,spec,SubjectAccessReviewSpec 3,status,SubjectAccessReviewStatus
authorization/v1.SubjectAccessReviewSpec 1,resourceAttributes,ResourceAttributes,p 2,nonResourceAttributes,NonResourceAttributes,p 3,user,s 4,groups,[]s 5,extra,{ExtraValue} 6,uid,s
authorization/v1.SubjectAccessReviewStatus 1,allowed,b,p 4,denied,b 2,reason,s 3,evaluationError,s
authorization/v1.SubjectRulesReviewStatus 1,resourceRules,[]ResourceRule 2,nonResourceRules,[]NonResourceRule 3,incomplete,b,p 4,evaluationError,s
authentication/v1.AttestationValue !array 1,items,[]s
authentication/v1.BoundObjectReference 1,kind,s 2,apiVersion,s 3,name,s 4,uid,s
authentication/v1.ExtraValue !array 1,items,[]s
authentication/v1.SelfSubjectReview 1,metadata,meta/v1.ObjectMeta 2,status,SelfSubjectReviewStatus
authentication/v1.SelfSubjectReviewStatus 1,userInfo,UserInfo
authentication/v1.TokenRequest 1,metadata,meta/v1.ObjectMeta 2,spec,TokenRequestSpec 3,status,TokenRequestStatus
authentication/v1.TokenRequestSpec 1,audiences,[]s,p 4,expirationSeconds,i64,p 3,boundObjectRef,BoundObjectReference,p 5,attestations,{AttestationValue}
authentication/v1.TokenRequestStatus 1,token,s,p 2,expirationTimestamp,meta/v1.Time
authentication/v1.TokenReview 1,metadata,meta/v1.ObjectMeta 2,spec,TokenReviewSpec 3,status,TokenReviewStatus
authentication/v1.TokenReviewSpec 1,token,s 2,audiences,[]s
authentication/v1.TokenReviewStatus 1,authenticated,b 2,user,UserInfo 4,audiences,[]s 3,error,s
authentication/v1.UserInfo 1,username,s 2,uid,s 3,groups,[]s 4,extra,{ExtraValue}
events/v1.Event 1,metadata,meta/v1.ObjectMeta 2,eventTime,meta/v1.MicroTime 3,series,EventSeries,p 4,reportingController,s 5,reportingInstance,s 6,action,s 7,reason,s 8,regarding,core/v1.ObjectReference 9,related,core/v1.ObjectReference,p 10,note,s 11,type,s 12,deprecatedSource,core/v1.EventSource 13,deprecatedFirstTimestamp,meta/v1.Time 14,deprecatedLastTimestamp,meta/v1.Time 15,deprecatedCount,i32
events/v1.EventList 1,metadata,meta/v1.ListMeta 2,items,[]Event
events/v1.EventSeries 1,count,i32,p 2,lastObservedTime,meta/v1.MicroTime
policy/v1.Eviction 1,metadata,meta/v1.ObjectMeta 2,deleteOptions,meta/v1.DeleteOptions,p
policy/v1.PodDisruptionBudget 1,metadata,meta/v1.ObjectMeta 2,spec,PodDisruptionBudgetSpec 3,status,PodDisruptionBudgetStatus
policy/v1.PodDisruptionBudgetList 1,metadata,meta/v1.ListMeta 2,items,[]PodDisruptionBudget
policy/v1.PodDisruptionBudgetSpec 1,minAvailable,intstr.IntOrString,p 2,selector,meta/v1.LabelSelector,p 3,maxUnavailable,intstr.IntOrString,p 4,unhealthyPodEvictionPolicy,s,p
policy/v1.PodDisruptionBudgetStatus 1,observedGeneration,i64 2,disruptedPods,{meta/v1.Time} 3,disruptionsAllowed,i32,p 4,currentHealthy,i32,p 5,desiredHealthy,i32,p 6,expectedPods,i32,p 7,conditions,[]meta/v1.Condition
networking/v1.HTTPIngressPath 1,path,s 3,pathType,s,p 2,backend,IngressBackend
networking/v1.HTTPIngressRuleValue 1,paths,[]HTTPIngressPath
networking/v1.IPAddress 1,metadata,meta/v1.ObjectMeta 2,spec,IPAddressSpec
networking/v1.IPAddressList 1,metadata,meta/v1.ListMeta 2,items,[]IPAddress
networking/v1.IPAddressSpec 1,parentRef,ParentReference,p
networking/v1.IPBlock 1,cidr,s,p 2,except,[]s
networking/v1.Ingress 1,metadata,meta/v1.ObjectMeta 2,spec,IngressSpec 3,status,IngressStatus
networking/v1.IngressBackend 4,service,IngressServiceBackend,p 3,resource,core/v1.TypedLocalObjectReference,p
networking/v1.IngressClass 1,metadata,meta/v1.ObjectMeta 2,spec,IngressClassSpec
networking/v1.IngressClassList 1,metadata,meta/v1.ListMeta 2,items,[]IngressClass
networking/v1.IngressClassParametersReference 1,apiGroup,s,p 2,kind,s,p 3,name,s,p 4,scope,s,p 5,namespace,s,p
networking/v1.IngressClassSpec 1,controller,s 2,parameters,IngressClassParametersReference,p
networking/v1.IngressList 1,metadata,meta/v1.ListMeta 2,items,[]Ingress
networking/v1.IngressLoadBalancerIngress 1,ip,s 2,hostname,s 4,ports,[]IngressPortStatus
networking/v1.IngressLoadBalancerStatus 1,ingress,[]IngressLoadBalancerIngress
networking/v1.IngressPortStatus 1,port,i32,p 2,protocol,s,p 3,error,s,p
networking/v1.IngressRule 1,host,s 2,,IngressRuleValue,i
networking/v1.IngressRuleValue 1,http,HTTPIngressRuleValue,p
networking/v1.IngressServiceBackend 1,name,s,p 2,port,ServiceBackendPort
networking/v1.IngressSpec 4,ingressClassName,s,p 1,defaultBackend,IngressBackend,p 2,tls,[]IngressTLS 3,rules,[]IngressRule
networking/v1.IngressStatus 1,loadBalancer,IngressLoadBalancerStatus
networking/v1.IngressTLS 1,hosts,[]s 2,secretName,s
networking/v1.NetworkPolicy 1,metadata,meta/v1.ObjectMeta 2,spec,NetworkPolicySpec
networking/v1.NetworkPolicyEgressRule 1,ports,[]NetworkPolicyPort 2,to,[]NetworkPolicyPeer
networking/v1.NetworkPolicyIngressRule 1,ports,[]NetworkPolicyPort 2,from,[]NetworkPolicyPeer
networking/v1.NetworkPolicyList 1,metadata,meta/v1.ListMeta 2,items,[]NetworkPolicy
networking/v1.NetworkPolicyPeer 1,podSelector,meta/v1.LabelSelector,p 2,namespaceSelector,meta/v1.LabelSelector,p 3,ipBlock,IPBlock,p
networking/v1.NetworkPolicyPort 1,protocol,s,p 2,port,intstr.IntOrString,p 3,endPort,i32,p
networking/v1.NetworkPolicySpec 1,podSelector,meta/v1.LabelSelector 2,ingress,[]NetworkPolicyIngressRule 3,egress,[]NetworkPolicyEgressRule 4,policyTypes,[]s
networking/v1.ParentReference 1,group,s 2,resource,s 3,namespace,s 4,name,s
networking/v1.ServiceBackendPort 1,name,s 2,number,i32
networking/v1.ServiceCIDR 1,metadata,meta/v1.ObjectMeta 2,spec,ServiceCIDRSpec 3,status,ServiceCIDRStatus
networking/v1.ServiceCIDRList 1,metadata,meta/v1.ListMeta 2,items,[]ServiceCIDR
networking/v1.ServiceCIDRSpec 1,cidrs,[]s
networking/v1.ServiceCIDRStatus 1,conditions,[]meta/v1.Condition
discovery/v1.Endpoint 1,addresses,[]s,p 2,conditions,EndpointConditions 3,hostname,s,p 4,targetRef,core/v1.ObjectReference,p 5,deprecatedTopology,{s} 6,nodeName,s,p 7,zone,s,p 8,hints,EndpointHints,p
discovery/v1.EndpointConditions 1,ready,b,p 2,serving,b,p 3,terminating,b,p
discovery/v1.EndpointHints 1,forZones,[]ForZone 2,forNodes,[]ForNode
discovery/v1.EndpointPort 1,name,s,p 2,protocol,s,p 3,port,i32,p 4,appProtocol,s,p
discovery/v1.EndpointSlice 1,metadata,meta/v1.ObjectMeta 4,addressType,s,p 2,endpoints,[]Endpoint 3,ports,[]EndpointPort
discovery/v1.EndpointSliceList 1,metadata,meta/v1.ListMeta 2,items,[]EndpointSlice
discovery/v1.ForNode 1,name,s,p
discovery/v1.ForZone 1,name,s,p
node/v1.Overhead 1,podFixed,{resource.Quantity}
node/v1.RuntimeClass 1,metadata,meta/v1.ObjectMeta 2,handler,s,p 3,overhead,Overhead,p 4,scheduling,Scheduling,p
node/v1.RuntimeClassList 1,metadata,meta/v1.ListMeta 2,items,[]RuntimeClass
node/v1.Scheduling 1,nodeSelector,{s} 2,tolerations,[]core/v1.Toleration
certificates/v1.CertificateSigningRequest 1,metadata,meta/v1.ObjectMeta 2,spec,CertificateSigningRequestSpec 3,status,CertificateSigningRequestStatus
certificates/v1.CertificateSigningRequestCondition 1,type,s,p 6,status,s,p 2,reason,s 3,message,s 4,lastUpdateTime,meta/v1.Time 5,lastTransitionTime,meta/v1.Time
certificates/v1.CertificateSigningRequestList 1,metadata,meta/v1.ListMeta 2,items,[]CertificateSigningRequest
certificates/v1.CertificateSigningRequestSpec 1,request,y,p 7,signerName,s,p 8,expirationSeconds,i32,p 5,usages,[]s 2,username,s 3,uid,s 4,groups,[]s 6,extra,{ExtraValue}
certificates/v1.CertificateSigningRequestStatus 1,conditions,[]CertificateSigningRequestCondition 2,certificate,y
certificates/v1.ClusterTrustBundle 1,metadata,meta/v1.ObjectMeta 2,spec,ClusterTrustBundleSpec
certificates/v1.ClusterTrustBundleList 1,metadata,meta/v1.ListMeta 2,items,[]ClusterTrustBundle
certificates/v1.ClusterTrustBundleSpec 1,signerName,s 2,trustBundle,s,p
certificates/v1.ExtraValue !array 1,items,[]s
certificates/v1.PodCertificateRequest 1,metadata,meta/v1.ObjectMeta 2,spec,PodCertificateRequestSpec 3,status,PodCertificateRequestStatus
certificates/v1.PodCertificateRequestList 1,metadata,meta/v1.ListMeta 2,items,[]PodCertificateRequest
certificates/v1.PodCertificateRequestSpec 1,signerName,s,p 2,podName,s,p 3,podUID,s,p 4,serviceAccountName,s,p 5,serviceAccountUID,s,p 6,nodeName,s,p 7,nodeUID,s,p 8,maxExpirationSeconds,i32,p 12,stubPKCS10Request,y,p 11,unverifiedUserAnnotations,{s}
certificates/v1.PodCertificateRequestStatus 1,conditions,[]meta/v1.Condition 2,certificateChain,s 4,notBefore,meta/v1.Time,p 5,beginRefreshAt,meta/v1.Time,p 6,notAfter,meta/v1.Time,p
meta/v1.APIGroup 1,name,s,p 2,versions,[]GroupVersionForDiscovery 3,preferredVersion,GroupVersionForDiscovery 4,serverAddressByClientCIDRs,[]ServerAddressByClientCIDR
meta/v1.APIGroupList 1,groups,[]APIGroup
meta/v1.APIResource 1,name,s,p 6,singularName,s,p 2,namespaced,b,p 8,group,s 9,version,s 3,kind,s,p 4,verbs,Verbs 5,shortNames,[]s 7,categories,[]s 10,storageVersionHash,s
meta/v1.APIResourceList 1,groupVersion,s,p 2,resources,[]APIResource
meta/v1.APIVersions 1,versions,[]s,p 2,serverAddressByClientCIDRs,[]ServerAddressByClientCIDR
meta/v1.ApplyOptions 1,dryRun,[]s 2,force,b,p 3,fieldManager,s,p
meta/v1.Condition 1,type,s,p 2,status,s,p 3,observedGeneration,i64 4,lastTransitionTime,Time 5,reason,s,p 6,message,s,p
meta/v1.CreateOptions 1,dryRun,[]s 3,fieldManager,s 4,fieldValidation,s
meta/v1.DeleteOptions 1,gracePeriodSeconds,i64,p 2,preconditions,Preconditions,p 3,orphanDependents,b,p 4,propagationPolicy,s,p 5,dryRun,[]s 6,ignoreStoreReadErrorWithClusterBreakingPotential,b,p
meta/v1.Duration 1,duration,i64,p
meta/v1.FieldSelectorRequirement 1,key,s,p 2,operator,s,p 3,values,[]s
meta/v1.FieldsV1 1,Raw,y
meta/v1.GetOptions 1,resourceVersion,s
meta/v1.GroupKind 1,group,s,p 2,kind,s,p
meta/v1.GroupResource 1,group,s,p 2,resource,s,p
meta/v1.GroupVersion 1,group,s,p 2,version,s,p
meta/v1.GroupVersionForDiscovery 1,groupVersion,s,p 2,version,s,p
meta/v1.GroupVersionKind 1,group,s,p 2,version,s,p 3,kind,s,p
meta/v1.GroupVersionResource 1,group,s,p 2,version,s,p 3,resource,s,p
meta/v1.LabelSelector 1,matchLabels,{s} 2,matchExpressions,[]LabelSelectorRequirement
meta/v1.LabelSelectorRequirement 1,key,s,p 2,operator,s,p 3,values,[]s
meta/v1.List 1,metadata,ListMeta 2,items,[]runtime.RawExtension
meta/v1.ListMeta 1,selfLink,s 2,resourceVersion,s 3,continue,s 4,remainingItemCount,i64,p 5,shardInfo,ShardInfo,p
meta/v1.ListOptions 1,labelSelector,s 2,fieldSelector,s 3,watch,b 9,allowWatchBookmarks,b 4,resourceVersion,s 10,resourceVersionMatch,s 5,timeoutSeconds,i64,p 7,limit,i64 8,continue,s 11,sendInitialEvents,b,p 15,shardSelector,s
meta/v1.ManagedFieldsEntry 1,manager,s 2,operation,s 3,apiVersion,s 4,time,Time,p 6,fieldsType,s 7,fieldsV1,FieldsV1,p 8,subresource,s
meta/v1.MicroTime 1,seconds,i64 2,nanos,i32
meta/v1.ObjectMeta 1,name,s 2,generateName,s 3,namespace,s 4,selfLink,s 5,uid,s 6,resourceVersion,s 7,generation,i64 8,creationTimestamp,Time 9,deletionTimestamp,Time,p 10,deletionGracePeriodSeconds,i64,p 11,labels,{s} 12,annotations,{s} 13,ownerReferences,[]OwnerReference 14,finalizers,[]s 17,managedFields,[]ManagedFieldsEntry
meta/v1.OwnerReference 5,apiVersion,s,p 1,kind,s,p 3,name,s,p 4,uid,s,p 6,controller,b,p 7,blockOwnerDeletion,b,p
meta/v1.PartialObjectMetadata 1,metadata,ObjectMeta
meta/v1.PartialObjectMetadataList 1,metadata,ListMeta 2,items,[]PartialObjectMetadata
meta/v1.Patch
meta/v1.PatchOptions 1,dryRun,[]s 2,force,b,p 3,fieldManager,s 4,fieldValidation,s
meta/v1.Preconditions 1,uid,s,p 2,resourceVersion,s,p
meta/v1.RootPaths 1,paths,[]s,p
meta/v1.ServerAddressByClientCIDR 1,clientCIDR,s,p 2,serverAddress,s,p
meta/v1.ShardInfo 1,selector,s,p
meta/v1.Status 1,metadata,ListMeta 2,status,s 3,message,s 4,reason,s 5,details,StatusDetails,p 6,code,i32
meta/v1.StatusCause 1,reason,s 2,message,s 3,field,s
meta/v1.StatusDetails 1,name,s 2,group,s 3,kind,s 6,uid,s 4,causes,[]StatusCause 5,retryAfterSeconds,i32
meta/v1.TableOptions 1,includeObject,s
meta/v1.Time 1,seconds,i64 2,nanos,i32
meta/v1.Timestamp 1,seconds,i64,p 2,nanos,i32,p
meta/v1.TypeMeta 1,kind,s 2,apiVersion,s
meta/v1.UpdateOptions 1,dryRun,[]s 2,fieldManager,s 3,fieldValidation,s
meta/v1.Verbs !array 1,items,[]s
meta/v1.WatchEvent 1,type,s,p 2,object,runtime.RawExtension
runtime.RawExtension 1,raw,y,p
runtime.TypeMeta 1,apiVersion,s 2,kind,s
runtime.Unknown 1,,TypeMeta,i 2,raw,y,p 3,contentEncoding,s,p 4,contentType,s,p
resource.Quantity 1,string,s
resource.QuantityValue 1,string,s
intstr.IntOrString 1,type,i64,p 2,intVal,i32,p 3,strVal,s,p
"""
