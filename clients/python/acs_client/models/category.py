from enum import StrEnum


class Category(StrEnum):
    BUG = "bug"
    IDEA = "idea"
    OTHER = "other"
    QUESTION = "question"
    STUCK = "stuck"

    def __str__(self) -> str:
        return str(self.value)
