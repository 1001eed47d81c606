"""Saved state: every structure prep writes and reads back (checkpoint, identities, shard
records, manifest, provenance) as a typed dataclass with ``to_json``/``from_json``."""
