"""Shared pieces of every topology plugin: request/result values, the node table, the
plugin Protocol, the retry loop, and the Mode-3 budget view."""
