from enum import StrEnum


class ConversationStatus(StrEnum):
    FAILED = "failed"
    IDLE = "idle"
    PENDING = "pending"
    RUNNING = "running"
    TERMINATED = "terminated"

    def __str__(self) -> str:
        return str(self.value)
