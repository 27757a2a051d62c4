from enum import StrEnum


class AttemptTrigger(StrEnum):
    AUTOMATIC = "automatic"
    REDELIVER = "redeliver"
    TEST = "test"

    def __str__(self) -> str:
        return str(self.value)
