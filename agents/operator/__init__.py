"""``sluice operator``: SluiceCluster resources reconciled into a Sluice system on Kubernetes.

| module | what it does |
|---|---|
| ``objects`` | a SluiceCluster → worker and projections Deployments, NodeSet StatefulSets |
| ``scaler`` | pending demand → NodeSet replicas within min/max (pure) |
| ``loop`` | the reconcile loop: apply objects, scale, drain before removal, status conditions |

The CRD and RBAC are in ``infra/kubernetes/manifests/``; see docs/kubernetes.md.
"""
