//! The `local` provider: bubblewrap namespaces on this host.

pub mod cgroup;
pub mod checkpoint;
pub mod net;
