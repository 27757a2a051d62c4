from enum import StrEnum


class Scope(StrEnum):
    FULL = "full"
    RESTRICTED = "restricted"
    SANDBOX = "sandbox"

    def __str__(self) -> str:
        return str(self.value)
