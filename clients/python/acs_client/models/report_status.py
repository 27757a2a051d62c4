from enum import StrEnum


class ReportStatus(StrEnum):
    FAILED = "failed"
    FORWARDED = "forwarded"
    NEW = "new"

    def __str__(self) -> str:
        return str(self.value)
