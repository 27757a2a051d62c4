from enum import StrEnum


class ProviderKind(StrEnum):
    CONTAINER = "container"
    KUBERNETES = "kubernetes"
    LOCAL = "local"
    RUNNER = "runner"

    def __str__(self) -> str:
        return str(self.value)
