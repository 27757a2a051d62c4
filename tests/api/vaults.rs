//! vaults
