//! blocklab coordinator: gRPC services, scheduler, SQLite catalog, and the CLI's logic.

pub mod spec;
