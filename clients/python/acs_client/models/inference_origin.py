from enum import StrEnum


class InferenceOrigin(StrEnum):
    OWN = "own"
    PLATFORM = "platform"

    def __str__(self) -> str:
        return str(self.value)
