//! agents
