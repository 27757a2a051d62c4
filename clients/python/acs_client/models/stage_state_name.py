from enum import StrEnum


class StageStateName(StrEnum):
    DONE = "done"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    STARTED = "started"

    def __str__(self) -> str:
        return str(self.value)
