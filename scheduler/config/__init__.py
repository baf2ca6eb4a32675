"""The cluster configuration: reading the cluster file (cluster), its
frozen values (model), accounts, requeue keys and value converters.
"""
