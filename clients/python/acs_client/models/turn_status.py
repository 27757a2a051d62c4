from enum import StrEnum


class TurnStatus(StrEnum):
    DONE = "done"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    RUNNING = "running"

    def __str__(self) -> str:
        return str(self.value)
