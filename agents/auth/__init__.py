"""Request credentials (munge, JWT), their checks at the intake, and sealed shard-inbox records
(docs/security.md)."""
