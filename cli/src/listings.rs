//! `--format table|csv|json|markdown` for the listings (`jobs`, `hosts`, `builds`): the same
//! table the terminal shows, as CSV (RFC 4180 quoting), a JSON array of objects keyed by the
//! column names in snake_case, or a Markdown table.

use comfy_table::Table;

use crate::commands::Format;

fn key(header: &str) -> String {
    let mut k = String::new();
    for c in header.chars() {
        if c.is_ascii_alphanumeric() {
            k.push(c.to_ascii_lowercase());
        } else if !k.ends_with('_') && !k.is_empty() {
            k.push('_');
        }
    }
    k.trim_end_matches('_').to_string()
}

fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

fn parts(t: &Table) -> (Vec<String>, Vec<Vec<String>>) {
    let header = t
        .header()
        .map(|h| h.cell_iter().map(|c| c.content()).collect())
        .unwrap_or_default();
    let rows = t
        .row_iter()
        .map(|r| r.cell_iter().map(|c| c.content()).collect())
        .collect();
    (header, rows)
}

/// `t` in `format`, ending with a newline.
pub fn render(t: &Table, format: Format) -> String {
    let (header, rows) = parts(t);
    match format {
        Format::Table => format!("{t}\n"),
        Format::Csv => {
            let mut out = String::new();
            for line in std::iter::once(&header).chain(&rows) {
                let fields: Vec<String> = line.iter().map(|v| csv_field(v)).collect();
                out.push_str(&fields.join(","));
                out.push('\n');
            }
            out
        }
        Format::Json => {
            let keys: Vec<String> = header.iter().map(|h| key(h)).collect();
            let items: Vec<serde_json::Value> = rows
                .iter()
                .map(|r| {
                    let m: serde_json::Map<String, serde_json::Value> = keys
                        .iter()
                        .zip(r)
                        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                        .collect();
                    serde_json::Value::Object(m)
                })
                .collect();
            serde_json::to_string_pretty(&items).unwrap_or_default() + "\n"
        }
        Format::Markdown => {
            let esc = |s: &String| s.replace('|', "\\|").replace('\n', " ");
            let line = |r: &Vec<String>| {
                format!(
                    "| {} |\n",
                    r.iter().map(esc).collect::<Vec<_>>().join(" | ")
                )
            };
            let mut out = line(&header);
            out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
            for r in &rows {
                out.push_str(&line(r));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new();
        t.set_header(vec!["job", "runs done/total", "db host"]);
        t.add_row(vec!["a1", "3/9", "db1"]);
        t.add_row(vec!["b,2", "0/1", "say \"x\" | y"]);
        t
    }

    #[test]
    fn every_format() {
        let t = sample();
        assert_eq!(
            render(&t, Format::Csv),
            "job,runs done/total,db host\na1,3/9,db1\n\"b,2\",0/1,\"say \"\"x\"\" | y\"\n"
        );
        let v: serde_json::Value = serde_json::from_str(&render(&t, Format::Json)).expect("json");
        assert_eq!(v[0]["runs_done_total"], "3/9");
        assert_eq!(v[1]["db_host"], "say \"x\" | y");
        let md = render(&t, Format::Markdown);
        assert!(
            md.starts_with("| job | runs done/total | db host |\n|---|---|---|\n| a1 |"),
            "{md}"
        );
        assert!(md.contains("say \"x\" \\| y"), "{md}");
        assert!(render(&t, Format::Table).contains("3/9"));
    }
}
