from enum import StrEnum


class SandboxMode(StrEnum):
    EPHEMERAL = "ephemeral"
    PERSISTENT = "persistent"

    def __str__(self) -> str:
        return str(self.value)
