from enum import StrEnum


class HitType(StrEnum):
    AGENT = "agent"
    ENVIRONMENT = "environment"
    VAULT = "vault"

    def __str__(self) -> str:
        return str(self.value)
