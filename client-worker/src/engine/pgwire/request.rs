//! A script's SQL commands as frames. Under the extended and prepared protocols each
//! command has a [`Template`] built once: everything of its Bind up to the parameter values
//! (after the Parse of the unnamed statement under `-M extended`) and everything after them
//! (Describe under `-M extended`, Execute, Sync). Sending a command copies the template and
//! writes the values in text format between the two, patching the Bind's length. Results
//! come back in text format, as libpq asks for them, and rows are kept only for
//! `\gset`/`\aset`.

use bytes::{BufMut, BytesMut};
use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::{DataRowBody, Message, RowDescriptionBody};
use postgres_protocol::message::frontend;

use super::{Conn, SqlError};
use blocklab_script::vars::{VarId, Variables};

/// The rows of a command with `\gset`/`\aset`: column names and text values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResultRows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
}

/// The frames of one SQL command around its parameter values.
#[derive(Clone, Debug)]
pub struct Template {
    head: Vec<u8>,
    /// Where the Bind starts in `head`.
    bind_at: usize,
    tail: Vec<u8>,
    /// The statement's parameter count, written in the Bind's head.
    nparams: usize,
}

fn encoded(f: impl FnOnce(&mut BytesMut) -> std::io::Result<()>) -> Result<Vec<u8>, SqlError> {
    let mut b = BytesMut::new();
    f(&mut b).map_err(|e| SqlError::Connection(format!("cannot encode a request: {e}")))?;
    Ok(b.to_vec())
}

impl Template {
    /// Bind/Execute/Sync of the prepared statement `name`.
    pub fn prepared(name: &str, nparams: usize) -> Result<Template, SqlError> {
        Template::build(Vec::new(), name, nparams, false)
    }

    /// Parse of the unnamed statement (types left to the server, as libpq's
    /// PQsendQueryParams), Bind, Describe of the portal, Execute, Sync.
    pub fn unnamed(sql: &str, nparams: usize) -> Result<Template, SqlError> {
        let parse = encoded(|b| frontend::parse("", sql, std::iter::empty(), b))?;
        Template::build(parse, "", nparams, true)
    }

    fn build(
        mut head: Vec<u8>,
        statement: &str,
        nparams: usize,
        describe: bool,
    ) -> Result<Template, SqlError> {
        let nparams = i16::try_from(nparams)
            .map_err(|_| SqlError::Connection("too many parameters in one command".into()))?;
        let bind_at = head.len();
        head.put_u8(b'B');
        head.put_i32(0); // the length, patched per request
        head.put_u8(0); // the unnamed portal
        head.put_slice(statement.as_bytes());
        head.put_u8(0);
        head.put_i16(0); // all parameters in text format
        head.put_i16(nparams);
        let tail = encoded(|b| {
            if describe {
                frontend::describe(b'P', "", b)?;
            }
            frontend::execute("", 0, b)?;
            frontend::sync(b);
            Ok(())
        })?;
        Ok(Template {
            head,
            bind_at,
            tail,
            nparams: nparams as usize,
        })
    }

    /// Appends the command with the current values of `params` (an unset variable is
    /// sent as NULL) to `out`.
    pub fn encode(
        &self,
        params: &[VarId],
        vars: &Variables,
        scratch: &mut String,
        out: &mut BytesMut,
    ) {
        let start = out.len();
        out.extend_from_slice(&self.head);
        for &id in params {
            scratch.clear();
            if vars.write_text(id, scratch) {
                out.put_i32(scratch.len() as i32);
                out.put_slice(scratch.as_bytes());
            } else {
                out.put_i32(-1);
            }
        }
        self.finish(start, out);
    }

    /// Appends the command with `values` written as text (their number is the statement's
    /// parameter count).
    pub fn encode_values(
        &self,
        values: &[&(dyn std::fmt::Display + Sync)],
        scratch: &mut String,
        out: &mut BytesMut,
    ) {
        use std::fmt::Write;
        debug_assert_eq!(values.len(), self.nparams, "one value per parameter");
        let start = out.len();
        out.extend_from_slice(&self.head);
        for v in values {
            scratch.clear();
            let _ = write!(scratch, "{v}");
            out.put_i32(scratch.len() as i32);
            out.put_slice(scratch.as_bytes());
        }
        self.finish(start, out);
    }

    fn finish(&self, start: usize, out: &mut BytesMut) {
        out.put_i16(0); // all results in text format
        let len_at = start + self.bind_at + 1;
        let len = (out.len() - len_at) as i32;
        out[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&self.tail);
    }
}

/// Appends a simple-protocol Query of `sql`.
pub fn simple(sql: &str, out: &mut BytesMut) -> Result<(), SqlError> {
    frontend::query(sql, out).map_err(|e| SqlError::Connection(format!("invalid query: {e}")))
}

/// The column names of a row description.
pub fn column_names(body: &RowDescriptionBody) -> Vec<String> {
    let mut names = Vec::new();
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        names.push(f.name().to_string());
    }
    names
}

fn row_values(body: &DataRowBody) -> Vec<Option<String>> {
    let buf = body.buffer();
    let mut values = Vec::new();
    let mut ranges = body.ranges();
    while let Ok(Some(r)) = ranges.next() {
        values.push(r.map(|r| String::from_utf8_lossy(&buf[r]).into_owned()));
    }
    values
}

/// Reads one command's reply up to its ReadyForQuery. With `rows`, keeps its rows (of the
/// last result set); `columns` are the prepared statement's, when it has a description
/// already. The first error of the reply is returned after the ReadyForQuery.
pub async fn read_reply(
    conn: &mut Conn,
    mut rows: Option<&mut ResultRows>,
    columns: Option<&[String]>,
) -> Result<(), SqlError> {
    if let (Some(r), Some(c)) = (rows.as_deref_mut(), columns) {
        r.columns = c.to_vec();
    }
    let mut first = None;
    loop {
        // Only what the reply's outcome and the kept rows need is decoded. A server that
        // ends the session sends its error first: that error is the command's.
        let h = match conn.header().await {
            Ok(h) => h,
            Err(e) => return Err(first.unwrap_or(e)),
        };
        match (h.tag(), rows.is_some()) {
            (b'Z', _) => {
                conn.skip(h);
                return first.map_or(Ok(()), Err);
            }
            (b'E', _) | (b'T' | b'D', true) => {}
            _ => {
                conn.skip(h);
                continue;
            }
        }
        let m = match conn.next().await {
            Ok(m) => m,
            Err(e) => return Err(first.unwrap_or(e)),
        };
        match m {
            Message::ErrorResponse(b) => {
                first.get_or_insert(SqlError::from_fields(b.fields()));
            }
            Message::RowDescription(b) => {
                if let Some(r) = rows.as_deref_mut() {
                    // A new result set: only the last one counts.
                    r.columns = column_names(&b);
                    r.rows.clear();
                }
            }
            Message::DataRow(b) => {
                if let Some(r) = rows.as_deref_mut() {
                    r.rows.push(row_values(&b));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_script::expr::Value;
    use blocklab_script::vars::Symbols;

    #[test]
    fn a_patched_bind_is_the_crates_own() {
        let mut sy = Symbols::default();
        let (a, b, c) = (sy.intern("a"), sy.intern("b"), sy.intern("c"));
        let mut vars = Variables::new(sy);
        vars.set_value(a, Value::Int(42));
        vars.set_text(b, "x y".into());
        let t = Template::prepared("P0_1", 3).unwrap();
        let (mut out, mut scratch) = (BytesMut::new(), String::new());
        t.encode(&[a, b, c], &vars, &mut scratch, &mut out);
        t.encode(&[a, b, c], &vars, &mut scratch, &mut out);

        let mut want = BytesMut::new();
        for _ in 0..2 {
            let values: [Option<&[u8]>; 3] = [Some(b"42"), Some(b"x y"), None];
            let bound = frontend::bind(
                "",
                "P0_1",
                [],
                values,
                |v, buf| {
                    Ok(match v {
                        Some(v) => {
                            buf.put_slice(v);
                            postgres_protocol::IsNull::No
                        }
                        None => postgres_protocol::IsNull::Yes,
                    })
                },
                [],
                &mut want,
            );
            assert!(bound.is_ok());
            frontend::execute("", 0, &mut want).unwrap();
            frontend::sync(&mut want);
        }
        assert_eq!(out, want);
    }

    /// A backend message: tag, length, body.
    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn row_description(names: &[&str]) -> Vec<u8> {
        let mut b = (names.len() as i16).to_be_bytes().to_vec();
        for n in names {
            b.extend_from_slice(n.as_bytes());
            b.push(0);
            b.extend_from_slice(&[0; 18]); // table, column, type, size, modifier, format
        }
        msg(b'T', &b)
    }

    fn data_row(values: &[Option<&str>]) -> Vec<u8> {
        let mut b = (values.len() as i16).to_be_bytes().to_vec();
        for v in values {
            match v {
                Some(v) => {
                    b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                    b.extend_from_slice(v.as_bytes());
                }
                None => b.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        msg(b'D', &b)
    }

    fn error(code: &str, message: &str) -> Vec<u8> {
        let mut b = Vec::new();
        for (t, v) in [(b'S', "ERROR"), (b'C', code), (b'M', message)] {
            b.push(t);
            b.extend_from_slice(v.as_bytes());
            b.push(0);
        }
        b.push(0);
        msg(b'E', &b)
    }

    /// A connection whose server sends `bytes` (in two pieces, split inside a message)
    /// and then closes its end.
    async fn served(bytes: Vec<u8>) -> Conn {
        use tokio::io::AsyncWriteExt;
        let (a, mut b) = tokio::net::UnixStream::pair().unwrap();
        tokio::spawn(async move {
            let half = bytes.len() / 2;
            b.write_all(&bytes[..half]).await.unwrap();
            tokio::task::yield_now().await;
            b.write_all(&bytes[half..]).await.unwrap();
        });
        Conn::new(super::super::Stream::Unix(a))
    }

    #[tokio::test]
    async fn replies_keep_the_last_result_sets_rows_and_the_first_error() {
        let ready = msg(b'Z', b"I");
        let done = msg(b'C', b"SELECT 1\0");
        let mut bytes = [
            row_description(&["a"]),
            data_row(&[Some("0")]),
            done.clone(),
            row_description(&["x", "y"]),
            data_row(&[Some("1"), None]),
            data_row(&[Some("2"), Some("two")]),
            done.clone(),
            ready.clone(),
        ]
        .concat();
        // A reply whose rows nobody keeps, then one with two errors.
        bytes.extend([data_row(&[Some("9")]), done, ready.clone()].concat());
        bytes.extend([error("40001", "first"), error("XX000", "second"), ready].concat());
        let mut conn = served(bytes).await;

        let mut rows = ResultRows::default();
        read_reply(&mut conn, Some(&mut rows), None).await.unwrap();
        assert_eq!(rows.columns, ["x", "y"]);
        let two = vec![Some("2".to_string()), Some("two".to_string())];
        assert_eq!(rows.rows, [vec![Some("1".to_string()), None], two]);

        read_reply(&mut conn, None, None).await.unwrap();

        let e = read_reply(&mut conn, None, None).await.unwrap_err();
        assert_eq!(e.code(), Some("40001"));
        assert!(e.is_retryable());
        assert_eq!(e.to_string(), "ERROR: first (SQLSTATE 40001)");
        assert!(!conn.is_broken());

        // The server is gone now.
        let e = read_reply(&mut conn, None, None).await.unwrap_err();
        assert_eq!(e.code(), None);
        assert!(conn.is_broken());
    }

    #[tokio::test]
    async fn a_server_that_ends_the_session_reports_its_error() {
        let mut conn = served(error("57P01", "terminating connection")).await;
        let e = read_reply(&mut conn, None, None).await.unwrap_err();
        assert_eq!(e.code(), Some("57P01"));
        assert!(conn.is_broken());
    }

    #[test]
    fn an_unnamed_command_parses_binds_and_describes() {
        let t = Template::unnamed("select 1", 0).unwrap();
        let vars = Variables::new(Symbols::default());
        let mut out = BytesMut::new();
        t.encode(&[], &vars, &mut String::new(), &mut out);
        let tags: Vec<u8> = {
            let mut tags = Vec::new();
            let mut i = 0;
            while i < out.len() {
                tags.push(out[i]);
                i += 1 + u32::from_be_bytes(out[i + 1..i + 5].try_into().unwrap()) as usize;
            }
            tags
        };
        assert_eq!(tags, b"PBDES");
    }
}
