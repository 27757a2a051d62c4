from enum import StrEnum


class SubscriptionStatus(StrEnum):
    ACTIVE = "active"
    DISCONNECTED = "disconnected"
    EXPIRED = "expired"
    REVOKED = "revoked"

    def __str__(self) -> str:
        return str(self.value)
