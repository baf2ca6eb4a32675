"""librdkafka's log lines for the CLI's own producer: kept, not printed.

When the CLI falls back to producing a request itself and the broker cannot be reached,
librdkafka logs a refused connection every 50 ms until the flush gives up (hundreds of lines
for one ``sluice submit``). The CLI's producer logs to :func:`quiet_logger` instead, and the
error the user sees names the last of those lines.
"""

from __future__ import annotations

import logging

__all__ = ["LastLine", "quiet_logger"]


class LastLine(logging.Handler):
    """Keeps the last message logged to it, on one line, at most 300 characters."""

    def __init__(self) -> None:
        super().__init__()
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.last = " ".join(record.getMessage().split())[:300]


def quiet_logger(name: str = "sluice.cli.kafka") -> tuple[logging.Logger, LastLine]:
    """A logger that prints nothing and remembers its last message (for librdkafka's
    ``logger`` setting), and the handler that remembers it."""
    handler = LastLine()
    logger = logging.getLogger(name)
    logger.propagate = False
    logger.handlers[:] = [handler]
    return logger, handler
