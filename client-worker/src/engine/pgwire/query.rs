//! Prepared statements of the workload drivers (TPC-C-like), on the same connection as the
//! measured loop: each statement is parsed once under its name, and each execution sends
//! one Bind/Execute/Sync built from its [`Template`] with the values written in text
//! format. Rows come back into one [`Rows`] buffer per connection, reused for every
//! statement: the values' bytes and where each starts, nothing allocated per row once the
//! buffer has grown.

use std::fmt::Display;

use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;

use super::request::Template;
use super::{Conn, SqlError};

/// The rows of the last statement: every value's text in one buffer.
#[derive(Debug, Default)]
pub struct Rows {
    data: Vec<u8>,
    /// Per value, row by row: its byte range in `data`, or None for NULL.
    cells: Vec<Option<(u32, u32)>>,
    columns: usize,
    rows: usize,
    /// The row count of the last CommandComplete (rows updated, inserted, selected).
    affected: u64,
}

/// A value of a row that is missing, NULL or not of the type asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("row {row}, column {column}: {what}")]
pub struct ValueError {
    pub row: usize,
    pub column: usize,
    pub what: String,
}

impl Rows {
    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The rows the statement affected, from its completion tag (`UPDATE 3`: 3).
    pub fn affected(&self) -> u64 {
        self.affected
    }

    fn clear(&mut self) {
        self.data.clear();
        self.cells.clear();
        self.columns = 0;
        self.rows = 0;
        self.affected = 0;
    }

    /// The text of `row`'s value in `column` (None for NULL).
    pub fn text(&self, row: usize, column: usize) -> Result<Option<&str>, ValueError> {
        let missing = || ValueError {
            row,
            column,
            what: format!(
                "the statement returned {} row(s) of {} column(s)",
                self.len(),
                self.columns
            ),
        };
        if column >= self.columns {
            return Err(missing());
        }
        let cell = self
            .cells
            .get(row * self.columns + column)
            .ok_or_else(missing)?;
        match cell {
            None => Ok(None),
            Some((from, to)) => std::str::from_utf8(&self.data[*from as usize..*to as usize])
                .map(Some)
                .map_err(|_| ValueError {
                    row,
                    column,
                    what: "the value is not UTF-8".into(),
                }),
        }
    }

    fn parsed<T: std::str::FromStr>(
        &self,
        row: usize,
        column: usize,
        type_name: &str,
    ) -> Result<T, ValueError> {
        let text = self.text(row, column)?.ok_or_else(|| ValueError {
            row,
            column,
            what: format!("NULL where {type_name} was expected"),
        })?;
        text.parse().map_err(|_| ValueError {
            row,
            column,
            what: format!("{text:?} is not {type_name}"),
        })
    }

    /// `row`'s value in `column` as an integer.
    pub fn int(&self, row: usize, column: usize) -> Result<i64, ValueError> {
        self.parsed(row, column, "an integer")
    }

    /// `row`'s value in `column` as a float.
    pub fn float(&self, row: usize, column: usize) -> Result<f64, ValueError> {
        self.parsed(row, column, "a number")
    }
}

/// Parses `sql` as the prepared statement `name` (parameter types left to the server) and
/// returns its Bind/Execute/Sync template.
pub async fn prepare(conn: &mut Conn, name: &str, sql: &str) -> Result<Template, SqlError> {
    let bad = |e: std::io::Error| SqlError::Connection(format!("cannot encode a request: {e}"));
    frontend::parse(name, sql, std::iter::empty(), &mut conn.out).map_err(bad)?;
    frontend::describe(b'S', name, &mut conn.out).map_err(bad)?;
    frontend::sync(&mut conn.out);
    conn.flush().await?;
    let mut params = None;
    let mut first = None;
    loop {
        match conn.next().await? {
            Message::ReadyForQuery(_) => break,
            Message::ErrorResponse(b) => {
                first.get_or_insert(SqlError::from_fields(b.fields()));
            }
            Message::ParameterDescription(b) => {
                params = Some(b.parameters().count().unwrap_or(0));
            }
            _ => {}
        }
    }
    if let Some(e) = first {
        return Err(e);
    }
    let nparams = params.ok_or_else(|| {
        SqlError::Connection("the server described no parameters of a prepared statement".into())
    })?;
    Template::prepared(name, nparams)
}

/// Runs the prepared statement of `template` with `values` and keeps its rows in `rows`.
pub async fn query(
    conn: &mut Conn,
    template: &Template,
    values: &[&(dyn Display + Sync)],
    scratch: &mut String,
    rows: &mut Rows,
) -> Result<(), SqlError> {
    template.encode_values(values, scratch, &mut conn.out);
    conn.flush().await?;
    read_rows(conn, rows).await
}

/// Runs `sql` with the simple protocol (transaction control); its rows are not kept.
pub async fn simple(conn: &mut Conn, sql: &str) -> Result<(), SqlError> {
    super::request::simple(sql, &mut conn.out)?;
    conn.flush().await?;
    super::request::read_reply(conn, None, None).await
}

/// Runs `sql` with the simple protocol and keeps its rows (of every statement in it) in
/// `rows`.
pub async fn simple_rows(conn: &mut Conn, sql: &str, rows: &mut Rows) -> Result<(), SqlError> {
    super::request::simple(sql, &mut conn.out)?;
    conn.flush().await?;
    read_rows(conn, rows).await
}

/// The row count at the end of a completion tag (`INSERT 0 5`: 5), or 0.
fn tag_count(tag: &str) -> u64 {
    tag.rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Reads one reply up to its ReadyForQuery, keeping its data rows; the first error of the
/// reply is returned after the ReadyForQuery.
async fn read_rows(conn: &mut Conn, rows: &mut Rows) -> Result<(), SqlError> {
    rows.clear();
    let mut first = None;
    loop {
        let h = match conn.header().await {
            Ok(h) => h,
            Err(e) => return Err(first.unwrap_or(e)),
        };
        match h.tag() {
            b'Z' => {
                conn.skip(h);
                return first.map_or(Ok(()), Err);
            }
            b'E' | b'D' | b'C' => {}
            _ => {
                conn.skip(h);
                continue;
            }
        }
        match conn.next().await {
            Ok(Message::ErrorResponse(b)) => {
                first.get_or_insert(SqlError::from_fields(b.fields()));
            }
            Ok(Message::DataRow(b)) => {
                let buf = b.buffer();
                let mut ranges = b.ranges();
                let mut n = 0;
                while let Ok(Some(r)) = ranges.next() {
                    n += 1;
                    rows.cells.push(r.map(|r| {
                        let from = rows.data.len() as u32;
                        rows.data.extend_from_slice(&buf[r]);
                        (from, rows.data.len() as u32)
                    }));
                }
                rows.columns = n;
                rows.rows += 1;
            }
            Ok(Message::CommandComplete(b)) => {
                rows.affected = b.tag().map(tag_count).unwrap_or(0);
            }
            Ok(_) => {}
            Err(e) => return Err(first.unwrap_or(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows as `read_rows` leaves them: two rows of (int, text-or-NULL).
    fn two_rows() -> Rows {
        let mut r = Rows::default();
        for (a, b) in [("42", Some("x")), ("-7", None)] {
            let from = r.data.len() as u32;
            r.data.extend_from_slice(a.as_bytes());
            r.cells.push(Some((from, r.data.len() as u32)));
            r.cells.push(b.map(|b| {
                let from = r.data.len() as u32;
                r.data.extend_from_slice(b.as_bytes());
                (from, r.data.len() as u32)
            }));
        }
        r.columns = 2;
        r.rows = 2;
        r
    }

    #[test]
    fn values_are_read_by_row_and_column() {
        let r = two_rows();
        assert_eq!(r.len(), 2);
        assert_eq!(r.int(0, 0), Ok(42));
        assert_eq!(r.int(1, 0), Ok(-7));
        assert_eq!(r.float(1, 0), Ok(-7.0));
        assert_eq!(r.text(0, 1), Ok(Some("x")));
        assert_eq!(r.text(1, 1), Ok(None));
    }

    #[test]
    fn completion_tags_give_their_row_counts() {
        assert_eq!(tag_count("UPDATE 3"), 3);
        assert_eq!(tag_count("INSERT 0 5"), 5);
        assert_eq!(tag_count("SELECT 12"), 12);
        assert_eq!(tag_count("BEGIN"), 0);
    }

    #[test]
    fn a_missing_null_or_mistyped_value_names_its_place() {
        let r = two_rows();
        let e = r.int(0, 1).unwrap_err();
        assert_eq!((e.row, e.column), (0, 1));
        assert_eq!(e.to_string(), "row 0, column 1: \"x\" is not an integer");
        let e = r.int(1, 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "row 1, column 1: NULL where an integer was expected"
        );
        let e = r.text(2, 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "row 2, column 0: the statement returned 2 row(s) of 2 column(s)"
        );
        assert!(r.text(0, 2).is_err());
        assert!(Rows::default().is_empty());
        assert_eq!(Rows::default().len(), 0);
    }
}
