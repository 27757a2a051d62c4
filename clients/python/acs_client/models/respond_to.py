from enum import StrEnum


class RespondTo(StrEnum):
    ALLOWLIST = "allowlist"
    ANYONE = "anyone"
    NOBODY = "nobody"
    OWNER_ONLY = "owner-only"

    def __str__(self) -> str:
        return str(self.value)
