//! A table of results: one header row and string cells, written as a
//! markdown table in summaries and as CSV next to them.

use std::fmt::Write;

/// Rows of cells under named columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// File stem of the CSV (`NAME.csv`).
    pub name: String,
    /// Column headings.
    pub columns: Vec<String>,
    /// Cells, one `Vec` per row (short rows are padded with empty cells).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table named `name` with these columns.
    pub fn new(name: &str, columns: &[&str]) -> Self {
        Self {
            name: name.to_string(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// The table in markdown; numeric-looking columns are right-aligned.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let escape = |cell: &str| cell.replace('|', "\\|");
        let _ = writeln!(
            out,
            "| {} |",
            self.columns
                .iter()
                .map(|c| escape(c))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let alignments: Vec<&str> = (0..self.columns.len())
            .map(|column| {
                let numeric = self.rows.iter().all(|row| {
                    row.get(column).is_none_or(|cell| {
                        cell.is_empty()
                            || cell.starts_with(|c: char| {
                                c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | '—' | '×')
                            })
                    })
                });
                if numeric {
                    "---:"
                } else {
                    "---"
                }
            })
            .collect();
        let _ = writeln!(out, "|{}|", alignments.join("|"));
        for row in &self.rows {
            let cells: Vec<String> = (0..self.columns.len())
                .map(|column| escape(row.get(column).map_or("", String::as_str)))
                .collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out
    }

    /// The table as CSV (RFC 4180 quoting where a cell needs it).
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let line = |cells: &mut dyn Iterator<Item = &str>| {
            cells.map(csv_cell).collect::<Vec<_>>().join(",")
        };
        let _ = writeln!(
            out,
            "{}",
            line(&mut self.columns.iter().map(String::as_str))
        );
        for row in &self.rows {
            let _ = writeln!(
                out,
                "{}",
                line(&mut (0..self.columns.len()).map(|c| row.get(c).map_or("", String::as_str)))
            );
        }
        out
    }
}

/// One CSV cell, quoted if it holds a comma, quote or line break.
fn csv_cell(cell: &str) -> String {
    if cell.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut table = Table::new("t", &["cc", "goodput (kB/s)"]);
        table.push(vec!["reno".into(), "81.9".into()]);
        table.push(vec!["veno, paper".into()]);
        table
    }

    #[test]
    fn markdown_right_aligns_numbers_and_pads_short_rows() {
        assert_eq!(
            sample().to_markdown(),
            "| cc | goodput (kB/s) |\n|---|---:|\n| reno | 81.9 |\n| veno, paper |  |\n"
        );
    }

    #[test]
    fn csv_quotes_cells_with_commas() {
        assert_eq!(
            sample().to_csv(),
            "cc,goodput (kB/s)\nreno,81.9\n\"veno, paper\",\n"
        );
    }
}
