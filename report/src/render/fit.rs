//! Text that fits a width: how a table for people is laid out ([`View`]), a plain table of
//! columns separated by two spaces, and words wrapped at the width. Widths count characters.

/// The width of the compact table when stdout is not a terminal (a pipe, a file, a log).
pub const PIPE_WIDTH: usize = 100;

/// How the text renderings lay out their tables and notes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// `None`: every column, as comfy-table draws them, notes unwrapped (`--wide`).
    /// `Some(w)`: the compact tables, fitted to `w` columns, notes wrapped at `w`.
    pub width: Option<usize>,
    /// The per-statement table also lists the statements of pgbench's builtin scripts
    /// (`--statements`); otherwise only those of the job's own script files.
    pub builtin_statements: bool,
}

impl View {
    /// Every column and every statement: what `render_results` and `render_compare` give.
    pub const FULL: View = View {
        width: None,
        builtin_statements: true,
    };

    /// The compact tables fitted to `width`, the statements of the job's own scripts only.
    pub fn fit(width: usize) -> View {
        View {
            width: Some(width),
            builtin_statements: false,
        }
    }

    /// `text` wrapped at the view's width (unchanged when wide).
    pub fn wrap(&self, text: &str) -> String {
        match self.width {
            Some(w) => wrap(text, w),
            None => text.to_string(),
        }
    }
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// One column of a plain table: its header, its cells, and whether they are numbers (aligned
/// right).
#[derive(Debug, Clone)]
pub struct Column {
    pub header: String,
    pub cells: Vec<String>,
    pub right: bool,
}

impl Column {
    pub fn left(header: impl Into<String>, cells: Vec<String>) -> Column {
        Column {
            header: header.into(),
            cells,
            right: false,
        }
    }

    pub fn right(header: impl Into<String>, cells: Vec<String>) -> Column {
        Column {
            right: true,
            ..Column::left(header, cells)
        }
    }

    fn width(&self) -> usize {
        self.cells
            .iter()
            .map(|c| chars(c))
            .chain([chars(&self.header)])
            .max()
            .unwrap_or(0)
    }
}

/// The separator between two columns.
const GAP: &str = "  ";

/// The width of the plain table of `columns`.
pub fn table_width(columns: &[&Column]) -> usize {
    columns.iter().map(|c| c.width()).sum::<usize>() + GAP.len() * columns.len().saturating_sub(1)
}

/// A plain table: the headers, a dashed line under each, then the rows; columns separated by
/// two spaces, no trailing spaces.
pub fn plain_table(columns: &[&Column]) -> String {
    let widths: Vec<usize> = columns.iter().map(|c| c.width()).collect();
    let rows = columns.iter().map(|c| c.cells.len()).max().unwrap_or(0);
    let line = |cell: &dyn Fn(&Column) -> String| {
        let fields: Vec<String> = columns
            .iter()
            .zip(&widths)
            .map(|(c, w)| {
                let text = cell(c);
                let pad = " ".repeat(w - chars(&text).min(*w));
                if c.right { pad + &text } else { text + &pad }
            })
            .collect();
        fields.join(GAP).trim_end().to_string() + "\n"
    };
    let mut out = line(&|c: &Column| c.header.clone());
    out.push_str(&line(&|c: &Column| "-".repeat(c.width())));
    for i in 0..rows {
        out.push_str(&line(&|c: &Column| {
            c.cells.get(i).cloned().unwrap_or_default()
        }));
    }
    out
}

/// `text` with every line longer than `width` wrapped at spaces; a continued line is indented
/// two spaces more than the line it continues. A single word longer than the width stays
/// whole on a line of its own (a path or a name is not cut).
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if chars(body) <= width {
            out.push_str(line);
            continue;
        }
        let indent = body.len() - body.trim_start().len();
        let lead = &body[..indent];
        let next_lead = format!("{lead}  ");
        let mut current = lead.to_string();
        let mut empty = true;
        for word in body.split_whitespace() {
            let need = chars(&current) + usize::from(!empty) + chars(word);
            if !empty && need > width {
                out.push_str(&current);
                out.push('\n');
                current = next_lead.clone();
                empty = true;
            }
            if !empty {
                current.push(' ');
            }
            current.push_str(word);
            empty = false;
        }
        out.push_str(&current);
        out.push_str(newline);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_wrap_at_spaces_and_keep_their_indent() {
        let text = "alpha beta gamma delta\n  one two three four five\nshort\n";
        assert_eq!(
            wrap(text, 12),
            "alpha beta\n  gamma\n  delta\n  one two\n    three\n    four\n    five\nshort\n"
        );
        // A word longer than the width is not cut.
        assert_eq!(
            wrap("catalog: /var/lib/blocklab/catalog.db", 10),
            "catalog:\n  /var/lib/blocklab/catalog.db"
        );
        assert_eq!(wrap("fits", 4), "fits");
    }

    #[test]
    fn a_plain_table_aligns_numbers_right() {
        let a = Column::left("cell", vec!["bs=8K".into(), "bs=16K".into()]);
        let b = Column::right("n", vec!["3".into(), "12".into()]);
        let c = Column::left("verdict", vec!["baseline".into(), "faster".into()]);
        let text = plain_table(&[&a, &b, &c]);
        assert_eq!(
            text,
            "cell     n  verdict\n------  --  --------\nbs=8K    3  baseline\nbs=16K  12  faster\n"
        );
        assert_eq!(table_width(&[&a, &b, &c]), 20);
    }
}
