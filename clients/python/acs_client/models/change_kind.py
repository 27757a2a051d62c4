from enum import StrEnum


class ChangeKind(StrEnum):
    ADDED = "added"
    COPIED = "copied"
    DELETED = "deleted"
    IGNORED = "ignored"
    MODIFIED = "modified"
    RENAMED = "renamed"
    TYPE_CHANGED = "type_changed"
    UNCHANGED = "unchanged"
    UNMERGED = "unmerged"
    UNTRACKED = "untracked"

    def __str__(self) -> str:
        return str(self.value)
