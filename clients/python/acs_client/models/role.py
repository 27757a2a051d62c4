from enum import StrEnum


class Role(StrEnum):
    AGENT = "agent"
    USER = "user"

    def __str__(self) -> str:
        return str(self.value)
