//! credentials
