"""The scheduling pass's parts: queue order (priority, fair share),
limits (QOS, associations, licenses), placement through the topology plugins, and
backfill (the availability profile, its release rows, the backfill stage).
"""
