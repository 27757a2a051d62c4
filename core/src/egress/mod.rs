//! The egress proxy every sandbox's HTTP(S) traffic passes.
