from enum import StrEnum


class MachineProvider(StrEnum):
    CONTAINER = "container"
    KUBERNETES = "kubernetes"
    LOCAL = "local"
    RUNNER = "runner"

    def __str__(self) -> str:
        return str(self.value)
