"""Nodes: registration and failure, operators' drain/resume, the state
Slurm shows, failure handling and hostlist expressions.
"""
