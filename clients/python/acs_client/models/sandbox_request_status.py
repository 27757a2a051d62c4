from enum import StrEnum


class SandboxRequestStatus(StrEnum):
    CANCELLED = "cancelled"
    FAILED = "failed"
    QUEUED = "queued"
    STARTED = "started"

    def __str__(self) -> str:
        return str(self.value)
