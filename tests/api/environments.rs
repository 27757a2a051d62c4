//! environments
