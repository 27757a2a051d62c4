from enum import StrEnum


class MachineStateView(StrEnum):
    MISSING = "missing"
    RUNNING = "running"
    STOPPED = "stopped"

    def __str__(self) -> str:
        return str(self.value)
