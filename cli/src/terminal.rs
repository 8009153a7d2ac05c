//! How wide the results may be: `COLUMNS` when it is set, else the terminal's width when
//! stdout is a terminal, else [`PIPE_WIDTH`] (a pipe, a file, a log). And stdout itself:
//! [`out`] returns a reader that has gone (`blocklab results | head`) as an error, which
//! `main` ends on quietly ([`is_broken_pipe`]) instead of panicking as `print!` does.

use std::io::{IsTerminal, Write as _};

use blocklab_report::render::{PIPE_WIDTH, View};

/// A width from the value of `COLUMNS`, if it is a positive number.
fn columns(value: Option<&str>) -> Option<usize> {
    value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|w| *w > 0)
}

/// The width the compact tables and their notes fit.
pub fn width() -> usize {
    if let Some(w) = columns(std::env::var("COLUMNS").ok().as_deref()) {
        return w;
    }
    let stdout = std::io::stdout();
    if stdout.is_terminal()
        && let Some((terminal_size::Width(w), _)) = terminal_size::terminal_size_of(&stdout)
        && w > 0
    {
        return usize::from(w);
    }
    PIPE_WIDTH
}

/// The view of `results` and `compare`: every column with `wide`, else the compact tables
/// at [`width`]; the statements of builtin scripts with `statements`.
pub fn view(wide: bool, statements: bool) -> View {
    View {
        width: (!wide).then(width),
        builtin_statements: statements,
    }
}

/// Writes `text` to stdout and flushes it.
pub fn out(text: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_fmt(text)?;
    stdout.flush()
}

/// Whether an error is stdout's reader having gone (EPIPE), anywhere in its chain.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_counts_when_it_is_a_positive_number() {
        assert_eq!(columns(Some("80")), Some(80));
        assert_eq!(columns(Some(" 132 ")), Some(132));
        assert_eq!(columns(Some("0")), None);
        assert_eq!(columns(Some("wide")), None);
        assert_eq!(columns(None), None);
    }

    #[test]
    fn wide_has_no_width() {
        assert_eq!(view(true, false).width, None);
        assert!(view(false, true).builtin_statements);
        assert!(view(false, false).width.is_some_and(|w| w > 0));
    }
}
