//! The fuzz target's body, shared by `fuzz/` (cargo-fuzz) and a plain unit test: parse
//! any text as a script, then evaluate every expression in it. Must never panic.

use crate::expr::{EvalCtx, Expr};
use crate::parse::{Command, parse_script};
use crate::prng::PgPrng;
use crate::vars::{Symbols, Variables};

pub fn fuzz_script(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut symbols = Symbols::default();
    let Ok(script) = parse_script("fuzz.sql", &text, &mut symbols) else {
        return;
    };
    let mut vars = Variables::new(symbols);
    let mut rng = PgPrng::seed(data.len() as u64);
    let mut out = Vec::new();
    for (i, step) in script.steps.iter().enumerate() {
        let e: &Expr = match &step.command {
            Command::Set(id, e) => {
                let mut cx = EvalCtx {
                    vars: &mut vars,
                    rng: &mut rng,
                    position: (0, i + 1),
                    debug_out: Some(&mut out),
                };
                if let Ok(v) = e.eval(&mut cx) {
                    vars.set_value(*id, v);
                }
                continue;
            }
            Command::If(e, _) | Command::Elif(e, _, _) => e,
            Command::Sql(c) => {
                let mut s = String::new();
                c.interpolate(&vars, &mut s);
                continue;
            }
            _ => continue,
        };
        let mut cx = EvalCtx {
            vars: &mut vars,
            rng: &mut rng,
            position: (0, i + 1),
            debug_out: Some(&mut out),
        };
        let _ = e.eval(&mut cx);
    }
    let _ = parse_script("fuzz.sql", &text, &mut Symbols::default()).map_err(|e| e.to_string());
}

#[cfg(test)]
mod tests {
    use super::fuzz_script;
    use crate::prng::PgPrng;

    const PIECES: &[&str] = &[
        "\\set ",
        "x ",
        ":x",
        "(",
        ")",
        "+",
        "-",
        "*",
        "/",
        "%",
        "<<",
        ">>",
        "&",
        "|",
        "#",
        "~",
        "=",
        "<>",
        "<=",
        ">",
        "not ",
        " and ",
        " or ",
        " is ",
        "null",
        "true",
        "isnull",
        "notnull",
        "case when ",
        " then ",
        " else ",
        " end",
        "random(",
        "hash(",
        "permute(",
        "random_zipfian(",
        "random_gaussian(",
        "random_exponential(",
        "least(",
        "greatest(",
        "debug(",
        "pi()",
        "int(",
        "double(",
        "sqrt(",
        "ln(",
        "exp(",
        "pow(",
        "abs(",
        ",",
        "1",
        "0",
        "-1",
        "9223372036854775807",
        "9223372036854775808",
        "1.5",
        ".5e3",
        "1e400",
        "\n",
        "\\if ",
        "\\elif ",
        "\\else",
        "\\endif",
        "\\sleep ",
        "ms",
        "\\gset",
        "\\aset p_",
        "select ",
        "';'",
        "$$;$$",
        "--c\n",
        "/*",
        "*/",
        ";",
        "\\;",
        "\\",
        "é",
        "\\startpipeline",
        "\\endpipeline",
        "\\shell ",
        "\\setshell v ",
        "\\\n",
        ":",
        "::",
        "'",
        "\"",
        "$a$",
        "\t",
        "\r",
    ];

    /// A few hundred thousand random scripts built from the language's pieces, plus
    /// random bytes: the same body as the cargo-fuzz target, runnable on stable.
    #[test]
    fn random_scripts_never_panic() {
        let mut rng = PgPrng::seed(2024);
        let iterations = std::env::var("BLOCKLAB_FUZZ_ITERATIONS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(30_000u32);
        for _ in 0..iterations {
            let n = rng.u64_range(1, 40) as usize;
            let mut s = String::new();
            for _ in 0..n {
                s.push_str(PIECES[rng.u64_range(0, PIECES.len() as u64 - 1) as usize]);
            }
            fuzz_script(s.as_bytes());
            let bytes: Vec<u8> = (0..rng.u64_range(0, 64))
                .map(|_| rng.next_u64() as u8)
                .collect();
            fuzz_script(&bytes);
        }
        fuzz_script(b"\\set x ");
        fuzz_script(format!("\\set x {}1{}", "(".repeat(5000), ")".repeat(5000)).as_bytes());
        fuzz_script(format!("\\set x {}1", "-".repeat(5000)).as_bytes());
    }
}
