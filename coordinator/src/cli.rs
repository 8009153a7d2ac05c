//! The `blocklab` command-line client.
