from enum import StrEnum


class LivenessStatus(StrEnum):
    OK = "ok"

    def __str__(self) -> str:
        return str(self.value)
