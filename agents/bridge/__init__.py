"""``sluice bridge``: Sluice as a Kubernetes scheduler (pods with ``schedulerName: sluice``).

| module | what it does |
|---|---|
| ``gang`` | a pod or a Job's pods → one Sluice job spec (requests, annotations) |
| ``quantity`` | Kubernetes quantities (``500m``, ``4Gi``) → CPUs and MB |
| ``topology`` | Nodes' Topograph labels → a Sluice topology.yaml |
| ``slots`` | which pod goes to which node of a Sluice run (pure) |
| ``kube`` | the Kubernetes side: watches, Binding, pod deletion, pod conditions |
| ``daemon`` | the loop: watch events in, Sluice requests and heartbeats out, node commands in |

See docs/kubernetes.md.
"""
