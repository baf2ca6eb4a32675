"""The shard's state and the values every concern shares: jobs and nodes
(model), the node index, fact meta (stamp), SLUID texts and the named reasons.
"""
