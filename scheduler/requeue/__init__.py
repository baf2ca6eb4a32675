"""Requeue after a run ends: the rules (shared by decide and evolve),
RequeueJob, folding the requeue facts and gang-aware hot swap.
"""
