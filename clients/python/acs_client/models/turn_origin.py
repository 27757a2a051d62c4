from enum import StrEnum


class TurnOrigin(StrEnum):
    API = "api"
    AUTONOMOUS = "autonomous"

    def __str__(self) -> str:
        return str(self.value)
