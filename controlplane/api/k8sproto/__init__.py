"""Kubernetes' protobuf on the wire: the message table (table.py, facts from
generated.proto), its compiled form (schema.py), the converter between
messages and skiff's dict objects (codec.py) and the envelope, list, Status
and watch framing (envelope.py)."""
