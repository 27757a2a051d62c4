from enum import StrEnum


class LinkAttemptKind(StrEnum):
    LINK = "link"
    RECONNECT = "reconnect"

    def __str__(self) -> str:
        return str(self.value)
