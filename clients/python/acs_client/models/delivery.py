from enum import StrEnum


class Delivery(StrEnum):
    ACCEPTED = "accepted"
    QUEUED = "queued"

    def __str__(self) -> str:
        return str(self.value)
