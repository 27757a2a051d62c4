from enum import StrEnum


class LedgerReason(StrEnum):
    GRANT = "grant"
    INITIAL_GRANT = "initial_grant"
    PLATFORM_TURN = "platform_turn"
    SANDBOX_TIME = "sandbox_time"

    def __str__(self) -> str:
        return str(self.value)
