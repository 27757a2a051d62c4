from enum import StrEnum


class WakeStatus(StrEnum):
    AWAKE = "awake"
    WAKING = "waking"

    def __str__(self) -> str:
        return str(self.value)
