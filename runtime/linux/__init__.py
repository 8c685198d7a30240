"""The only code in skiff that calls libc directly: namespaces, mounts,
cgroups, capabilities, seccomp. Modules here import only the standard library
(the per-container monitor imports them and must stay small), and never
import grpc, protobuf or pyroute2."""
