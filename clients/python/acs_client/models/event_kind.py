from enum import StrEnum


class EventKind(StrEnum):
    OUTPUT = "output"
    STAGE = "stage"

    def __str__(self) -> str:
        return str(self.value)
