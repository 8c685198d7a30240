"""The skiff CNI plugin (`skiff-cni`) and its IPAM (`skiff-ipam`).

Every module on the ADD/DEL path imports only C-level builtins (`_json`,
`_socket`, `ctypes`, `fcntl`, `struct`) so that a plugin invocation costs
little more than a bare interpreter: no `json`/`re`, `subprocess`,
`ipaddress`, `dataclasses`, `typing` at run time or `pyroute2`. Keep this
file empty of imports.
"""
