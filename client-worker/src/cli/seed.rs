//! `--random-seed`: an integer, `time` or `rand`, as pgbench takes it.

pub fn parse_seed(s: &str) -> Result<Option<u64>, String> {
    match s {
        "time" => Ok(None),
        "rand" => Ok(Some(rand::random::<u64>())),
        n => n.parse().map(Some).map_err(|_| {
            format!("unrecognized random seed option \"{n}\": expecting an unsigned integer, \"time\" or \"rand\"")
        }),
    }
}
