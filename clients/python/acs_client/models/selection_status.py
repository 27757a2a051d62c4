from enum import StrEnum


class SelectionStatus(StrEnum):
    APPLIED = "applied"
    FAILED = "failed"
    NOT_APPLIED = "not_applied"

    def __str__(self) -> str:
        return str(self.value)
