from enum import StrEnum


class ApiAccess(StrEnum):
    NONE = "none"
    OWNER = "owner"

    def __str__(self) -> str:
        return str(self.value)
