//! acs machines: what runs on and beside a sandbox host, below the domain.
//! The providers (`provider`: the `local` bubblewrap machines, their
//! network, disks, uids and supervisor channel), the egress proxy
//! (`egress`), the client side of the Agent Client Protocol (`acp`) and the
//! named runtimes' installation and launch (`runtimes`). It depends only on
//! `acs-store` (docs/architecture.md).

pub mod acp;
pub mod egress;
pub mod provider;
pub mod runtimes;
