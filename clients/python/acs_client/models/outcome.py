from enum import StrEnum


class Outcome(StrEnum):
    CREATED = "created"
    ERROR = "error"
    UNCHANGED = "unchanged"
    UPDATED = "updated"
    UPSERTED = "upserted"

    def __str__(self) -> str:
        return str(self.value)
