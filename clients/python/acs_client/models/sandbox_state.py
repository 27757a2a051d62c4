from enum import StrEnum


class SandboxState(StrEnum):
    FAILED = "failed"
    PENDING = "pending"
    READY = "ready"
    STARTING = "starting"
    SUSPENDED = "suspended"
    TERMINATED = "terminated"

    def __str__(self) -> str:
        return str(self.value)
