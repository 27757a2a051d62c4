//! Console pages, black-box (being written).
