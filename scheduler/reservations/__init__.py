"""Slurm's advanced reservations: nodes set aside for a time window, for some users or accounts.

- :mod:`.model`: the reservation as the shard keeps it (``ShardMeta.reservations``), and who
  may use it;
- :mod:`.decide`: ``CreateReservation`` (create or update) and ``DeleteReservation`` →
  ``ReservationSet`` / ``ReservationDeleted`` or a ``RequestDenied`` with Slurm's words;
- :mod:`.windows`: what the scheduling pass asks (which nodes a job may use now, why a job of a
  reservation waits) and the reservations whose end came (``ReservationDeleted(ended)``).
"""
